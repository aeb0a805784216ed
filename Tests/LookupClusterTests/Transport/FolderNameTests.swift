import ClusterTransport
import Testing

/// Names from configuration and from cluster members as folder names: one path component, never the parent.
@Suite("Folder names")
struct FolderNameTests {
    @Test("Letters, digits, dots and dashes kept, anything else one underscore, dots-only and empty names prefixed")
    func safe() {
        #expect(FolderName.safe("net.example.lookup-block") == "net.example.lookup-block")
        #expect(FolderName.safe("host:8080") == "host_8080")
        #expect(FolderName.safe("a/b\\c d") == "a_b_c_d")
        #expect(FolderName.safe("téléphone") == "téléphone")
        #expect(FolderName.safe("..") == "_..")
        #expect(FolderName.safe(".") == "_.")
        #expect(FolderName.safe("") == "_")
        #expect(FolderName.safe("../x") == ".._x")
    }
}
