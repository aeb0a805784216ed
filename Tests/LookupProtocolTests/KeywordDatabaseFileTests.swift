import Dataset
import LookupProtocol
import Testing

/// The keyword-database CSV reader: hex and base64 values, header, line numbers in errors.
@Test("keyword database CSV")
func keywordDatabaseCSV() throws {
    let rows = try KeywordDatabaseFile.parseCSV("keyword,value\n+14085551212,01\n+14085551213,AAE=\r\n\n")
    #expect(rows.count == 2)
    #expect(rows[0].keyword == Array("+14085551212".utf8))
    #expect(rows[0].value == [1])
    #expect(rows[1].value == [0, 1])
    #expect(throws: DatasetError.malformedLines([.init(line: 2, why: "expected `keyword,value`")])) {
        try KeywordDatabaseFile.parseCSV("keyword,value\n+1408,01,02\n")
    }
    #expect(throws: DatasetError.malformedLines([.init(line: 1, why: "value is neither hex nor base64")])) {
        try KeywordDatabaseFile.parseCSV("+1408,@@@\n")
    }
}
