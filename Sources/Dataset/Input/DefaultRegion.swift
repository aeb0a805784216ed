/// The country a national number belongs to when the input writes it without `+` (`build-db --default-region`):
/// `(415) 555-0101` read as a US number is `+14155550101`, `020 7946 0000` read as a GB number `+442079460000`.
/// A region is an ISO 3166 code from the table below, or any country calling code written `+44`.
public struct DefaultRegion: Sendable, Equatable {
    /// The country calling code, digits only.
    public let callingCode: String
    /// The national trunk prefix dropped before the calling code is put in front (`0` in most countries, `8` in
    /// Russia, `06` in Hungary, none in Italy, whose numbers keep their leading 0, or Mexico).
    public let trunkPrefix: String

    /// Calling code and trunk prefix by ISO 3166 alpha-2 code (North America is handled as NANP: `1` is its
    /// calling code, and 10 digits are a national number).
    static let table: [String: (String, String)] = [
        "US": ("1", ""), "CA": ("1", ""), "PR": ("1", ""),
        "GB": ("44", "0"), "IE": ("353", "0"), "FR": ("33", "0"), "DE": ("49", "0"), "ES": ("34", ""), "IT": ("39", ""),
        "PT": ("351", ""), "NL": ("31", "0"), "BE": ("32", "0"), "LU": ("352", ""), "CH": ("41", "0"), "AT": ("43", "0"),
        "DK": ("45", ""), "SE": ("46", "0"), "NO": ("47", ""), "FI": ("358", "0"), "PL": ("48", ""), "CZ": ("420", ""),
        "SK": ("421", "0"), "HU": ("36", "06"), "RO": ("40", "0"), "BG": ("359", "0"), "GR": ("30", ""), "HR": ("385", "0"),
        "SI": ("386", "0"), "RS": ("381", "0"), "UA": ("380", "0"), "TR": ("90", "0"), "IL": ("972", "0"), "AE": ("971", "0"),
        "SA": ("966", "0"), "IN": ("91", "0"), "PK": ("92", "0"), "CN": ("86", "0"), "HK": ("852", ""), "TW": ("886", "0"),
        "JP": ("81", "0"), "KR": ("82", "0"), "SG": ("65", ""), "MY": ("60", "0"), "TH": ("66", "0"), "VN": ("84", "0"),
        "PH": ("63", "0"), "ID": ("62", "0"), "AU": ("61", "0"), "NZ": ("64", "0"), "ZA": ("27", "0"), "NG": ("234", "0"),
        "KE": ("254", "0"), "EG": ("20", "0"), "MA": ("212", "0"), "BR": ("55", "0"), "AR": ("54", "0"), "MX": ("52", ""),
        "CL": ("56", ""), "CO": ("57", ""), "PE": ("51", "0"), "RU": ("7", "8"), "KZ": ("7", "8"), "EE": ("372", ""),
        "LV": ("371", ""), "LT": ("370", "8"),
    ]

    /// The region named `text` (`US`, `gb`, or a calling code `+44` with trunk prefix `0`); nil if unknown.
    public init?(_ text: String) {
        if text.hasPrefix("+") {
            let digits = text.dropFirst()
            guard (1...3).contains(digits.count), digits.allSatisfy(\.isASCIIDigit), digits.first != "0" else { return nil }
            self.init(callingCode: String(digits), trunkPrefix: digits == "1" ? "" : "0")
            return
        }
        guard let (code, trunk) = Self.table[text.uppercased()] else { return nil }
        self.init(callingCode: code, trunkPrefix: trunk)
    }

    init(callingCode: String, trunkPrefix: String) {
        self.callingCode = callingCode
        self.trunkPrefix = trunkPrefix
    }

    /// The E.164 digits (no `+`) of national `digits`, or nil when they do not look like a number of the region.
    /// An international prefix (`00`, `011` in North America) makes the rest a full international number.
    func international(_ digits: [UInt8]) -> [UInt8]? {
        let text = String(decoding: digits, as: UTF8.self)
        if callingCode == "1" {
            if text.hasPrefix("011") { return Array(digits.dropFirst(3)) }
            if digits.count == 10 { return Array("1".utf8) + digits }
            if digits.count == 11, text.hasPrefix("1") { return digits }
            return nil
        }
        if text.hasPrefix("00") { return Array(digits.dropFirst(2)) }
        let national = !trunkPrefix.isEmpty && text.hasPrefix(trunkPrefix) ? Array(digits.dropFirst(trunkPrefix.utf8.count)) : digits
        return Array(callingCode.utf8) + national
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
