import Reports
import ServiceCore

extension ReportError {
    /// The answer: 400, 401, 413 or 415 with the code and reason.
    public var lookupError: LookupError {
        switch code {
        case .malformedJSON, .badField, .badNumber: return LookupError(.badRequest, "\(code.rawValue): \(reason)")
        case .tooLarge: return LookupError(.contentTooLarge, "\(code.rawValue): \(reason)")
        case .unauthenticated: return LookupError(.unauthorized, "\(code.rawValue): \(reason)")
        case .unsupportedMediaType: return LookupError(.unsupportedMediaType, "\(code.rawValue): \(reason)")
        }
    }
}
