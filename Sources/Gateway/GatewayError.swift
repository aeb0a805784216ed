import ServiceCore

/// Why the gateway could not carry a request, with a stable code. Errors before the request opened are answered
/// in the clear (the client cannot read anything else); errors after are answered inside the encapsulation.
public struct GatewayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let name: String
        init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The encapsulated request names a key identifier or suite the gateway does not have (400, `ohttp-key`).
        public static let keyConfiguration = Code("keyConfiguration")
        /// The encapsulation is malformed or does not open (400).
        public static let undecryptable = Code("undecryptable")
        /// The encapsulated request exceeds the limit (413).
        public static let tooLarge = Code("tooLarge")
        /// The request is not `message/ohttp-req` (415).
        public static let unsupportedMediaType = Code("unsupportedMediaType")
        /// The encapsulated request was seen before, within the replay window (422).
        public static let replayed = Code("replayed")
        /// The opened Binary HTTP request is malformed or not acceptable (encapsulated 400).
        public static let badInnerRequest = Code("badInnerRequest")
        /// The inner request names an origin no target serves (encapsulated 421).
        public static let targetNotAllowed = Code("targetNotAllowed")
        /// The target did not answer (encapsulated 502).
        public static let targetFailed = Code("targetFailed")
        /// No gateway key exists yet (503).
        public static let noKeys = Code("noKeys")
        /// The shared replay record cannot be consulted, so the request is not opened (503).
        public static let replayRecordUnavailable = Code("replayRecordUnavailable")
    }

    /// The code.
    public let code: Code
    /// A reason safe to send (never anything of the inner request).
    public let reason: String

    /// An error.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "gateway \(code): \(reason)" }

    /// The HTTP status of the answer.
    public var status: Int {
        switch code {
        case .keyConfiguration, .undecryptable, .badInnerRequest: 400
        case .tooLarge: 413
        case .unsupportedMediaType: 415
        case .replayed: 422
        case .targetNotAllowed: 421
        case .targetFailed: 502
        default: 503
        }
    }

    /// The RFC 9457 problem type: RFC 9458's `ohttp-key` for key problems, else one of CallVeil's.
    public var problemType: String {
        code == .keyConfiguration ? "https://iana.org/assignments/http-problem-types#ohttp-key"
            : "https://callveil.dev/problems/ohttp-\(code.name)"
    }

    /// The `application/problem+json` body.
    public var problemJSON: [UInt8] {
        func quoted(_ s: String) -> String {
            "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        return Array("{\"type\":\(quoted(problemType)),\"title\":\(quoted(reason)),\"status\":\(status)}".utf8)
    }
}
