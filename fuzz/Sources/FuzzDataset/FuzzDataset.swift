import Dataset
import Foundation
import FuzzSupport
import LookupProtocol

/// Dataset readers: the first byte picks one. 0: identity CSV; 1: identity text proto (`InputIdentities`);
/// 2: keyword-database CSV (`keyword,value`, hex or base64); each reader's rows then go through the checks
/// `build-db` runs (duplicates, E.164 normalization, the keyword databases).
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    Seeds.writeIfRequested {
        let csv = "number,name,category,block,cache_minutes\n+14155550100,Alice,person,false,10\n+1 (415) 555-0101,Shop,business,true,0\n4155550102,,,1,\n"
        let text = """
            identities { key: "+14155550100" value { name: "Alice" category: IDENTITY_CATEGORY_PERSON cache_expiry_minutes: 10 } }
            identities { key: "+14155550101" value { block: true } }
            """
        let keywords = "6b6579,0x76616c7565\nYWJj,ZGVm\n"
        return ["identity-csv": [0] + Array(csv.utf8), "identity-textproto": [1] + Array(text.utf8),
                "keyword-csv": [2] + Array(keywords.utf8)]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = input(start, count)
    guard let selector = bytes.first else { return 0 }
    let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
    switch selector % 3 {
    case 0, 1:
        let (records, _) = selector % 3 == 0 ? IdentityDataset.parseCSV(text) : IdentityDataset.parseTextProto(text)
        _ = IdentityDataset.duplicates(records)
        for record in records { _ = try? record.callIdentity() }
        _ = try? IdentityDataset.keywordDatabases(records)
    default:
        _ = try? KeywordDatabaseFile.parseCSV(text)
    }
    return 0
}
