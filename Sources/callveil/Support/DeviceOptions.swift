import ArgumentParser
import Onboarding

/// How `query` and `canary` reach a service as a device: the issuer, the gateway, the user token, a CA and the use
/// case names.
struct DeviceOptions: ParsableArguments {
    @Option(help: "Token issuer base URL (default: the service URL).")
    var issuerUrl: String?

    @Option(help: "Send every request through this Oblivious HTTP gateway URL (e.g. https://gw.example.com/ohttp-gateway), as a device does through Apple's relay.")
    var gatewayUrl: String?

    @Option(help: "The gateway's key configuration URL (default: ohttp-configs beside the gateway URL).")
    var gatewayKeysUrl: String?

    @Option(help: "The app's user token for Privacy Pass issuance (Bearer); without it no tokens are sent.")
    var userToken: String?

    @Option(help: "For https: a CA certificate (PEM) to trust besides the system's, as a server with a private CA needs.")
    var ca: String?

    @Option(help: "Block use case name.")
    var blockUsecase: String = "net.example.lookup.block"

    @Option(help: "Identity use case name.")
    var identityUsecase: String = "net.example.lookup.identity"

    /// The probe's settings for the service at `url`.
    func settings(url: String, userAgent: String, userIdentifier: String? = nil) -> DeviceProbe.Settings {
        DeviceProbe.Settings(url: url, issuerURL: issuerUrl, gatewayURL: gatewayUrl, gatewayKeysURL: gatewayKeysUrl, userToken: userToken,
                             userAgent: userAgent, userIdentifier: userIdentifier, ca: ca, blockUseCase: blockUsecase,
                             identityUseCase: identityUsecase)
    }
}
