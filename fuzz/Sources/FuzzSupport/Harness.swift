import Foundation

/// The bytes of one libFuzzer input.
public func input(_ start: UnsafeRawPointer, _ count: Int) -> [UInt8] {
    Array(UnsafeRawBufferPointer(start: start, count: count))
}

/// The recorded `/key` body the query seeds were made with (`fuzz/fixture/uploads/evaluation-key.binpb`; also
/// FuzzKeyUpload's seed, `fuzz/run.sh` passes the folder as a corpus).
public var recordedKeyPath: String { "\(Fixture.committed)/uploads/evaluation-key.binpb" }
