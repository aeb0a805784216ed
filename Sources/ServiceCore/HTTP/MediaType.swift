/// The media type of a `Content-Type` value without its parameters, lower-cased (`Application/JSON; charset=utf-8`
/// is `application/json`); nil when there is no header. One reading for every endpoint that checks media types.
package enum MediaType {
    package static func essence(_ contentType: String?) -> String? {
        contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
    }
}
