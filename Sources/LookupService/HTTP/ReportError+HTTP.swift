import Reports
import ServiceCore

extension ReportError {
    /// The answer: 400, 401, 413 or 415 with the code and reason.
    public var lookupError: LookupError {
        switch code {
        case .tooLarge: return LookupError(.contentTooLarge, "\(code): \(reason)")
        case .unauthenticated: return LookupError(.unauthorized, "\(code): \(reason)")
        case .unsupportedMediaType: return LookupError(.unsupportedMediaType, "\(code): \(reason)")
        default: return LookupError(.badRequest, "\(code): \(reason)")
        }
    }
}
