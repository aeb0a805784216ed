import Hummingbird

/// Conditional GET (RFC 9110 §13.1.2): whether the request's `If-None-Match` names `etag` (one of a
/// comma-separated list, or `*`), so the answer is 304. One reading for every download with an ETag.
enum EntityTag {
    static func matches(_ request: Request, etag: String) -> Bool {
        guard let header = request.headers[.ifNoneMatch] else { return false }
        return header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == etag || tag == "*"
        }
    }
}
