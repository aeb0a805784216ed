/// Standard deviation of the error distribution. Only σ = 3.2 is accepted, as in the reference.
public enum ErrorStdDev: Int, Sendable, Hashable {
    /// σ ≈ 3.2 (wire value 0).
    case stdDev32 = 0
}

/// Security level the parameters are checked against.
public enum SecurityLevel: Int, Sendable, Hashable {
    /// No check (wire value 0); test presets only.
    case unchecked = 0
    /// 128-bit post-quantum security (wire value 1).
    case quantum128 = 1
}

/// The numbers that define a BFV instance, as the wire carries them (`EncryptionParameters`).
public struct EncryptionParameters: Sendable, Hashable, CustomStringConvertible {
    /// Ring degree N (a power of two).
    public let polyDegree: Int
    /// Plaintext modulus t.
    public let plaintextModulus: UInt64
    /// All coefficient moduli in preset order; the last one is the special key-switching modulus p.
    public let coefficientModuli: [UInt64]
    /// Error distribution.
    public let errorStdDev: ErrorStdDev
    /// Security level.
    public let securityLevel: SecurityLevel

    /// Validates and creates parameters with the reference library's rules.
    public init(polyDegree: Int, plaintextModulus: UInt64, coefficientModuli: [UInt64],
                errorStdDev: ErrorStdDev = .stdDev32, securityLevel: SecurityLevel) throws {
        guard polyDegree >= 2, UInt64(polyDegree).isPowerOfTwo, polyDegree <= 1 << 17 else {
            throw HEError.invalidParameters("polynomial degree \(polyDegree) is not a power of two in [2, 2^17]")
        }
        guard !coefficientModuli.isEmpty, coefficientModuli.count <= 32 else {
            throw HEError.invalidParameters("between 1 and 32 coefficient moduli are required")
        }
        guard plaintextModulus >= 2, plaintextModulus < Modulus.maxValue else {
            throw HEError.invalidParameters("plaintext modulus \(plaintextModulus) out of range")
        }
        let twoN = UInt64(2 * polyDegree)
        for q in coefficientModuli {
            guard q < (1 << 61), q > plaintextModulus, q % twoN == 1, Primes.isPrime(q) else {
                throw HEError.invalidParameters("coefficient modulus \(q) must be a prime ≡ 1 mod 2N, above t, below 2^61")
            }
        }
        guard Set(coefficientModuli).count == coefficientModuli.count else {
            throw HEError.invalidParameters("coefficient moduli must be distinct")
        }
        if securityLevel == .quantum128 {
            // SPEC-HE §1: the reference allows at most 83 bits of Q·p at N=4096 and 165 at N=8192.
            let limits: [Int: Double] = [2048: 41, 4096: 83, 8192: 165, 16384: 330, 32768: 660]
            let maxLog2 = limits[polyDegree] ?? 0
            let total = coefficientModuli.reduce(0.0) { $0 + log2Approx($1) }
            guard total <= maxLog2 else {
                throw HEError.invalidParameters("log2 Q = \(total) exceeds \(maxLog2) for 128-bit security at N=\(polyDegree)")
            }
        }
        self.polyDegree = polyDegree
        self.plaintextModulus = plaintextModulus
        self.coefficientModuli = coefficientModuli
        self.errorStdDev = errorStdDev
        self.securityLevel = securityLevel
    }

    /// The parameters of a named preset.
    public init(_ preset: ParameterPreset) {
        // Presets are constants checked by the test suite, so validation cannot fail here.
        self.polyDegree = preset.polyDegree
        self.plaintextModulus = preset.plaintextModulus
        self.coefficientModuli = preset.coefficientModuli
        self.errorStdDev = .stdDev32
        self.securityLevel = preset.securityLevel
    }

    /// Whether t supports SIMD (batched) encoding: `t ≡ 1 mod 2N` and prime.
    public var supportsSimdEncoding: Bool {
        plaintextModulus % UInt64(2 * polyDegree) == 1 && Primes.isPrime(plaintextModulus)
    }

    /// The ciphertext moduli (all but the special modulus, unless there is only one modulus).
    public var ciphertextModuli: [UInt64] {
        coefficientModuli.count > 1 ? Array(coefficientModuli.dropLast()) : coefficientModuli
    }

    /// Whether evaluation keys (key switching) are supported: there must be a special modulus.
    public var supportsEvaluationKeys: Bool { coefficientModuli.count > 1 }

    /// Payload bytes one coefficient-encoded plaintext carries: `N · floor(log2 t) / 8`.
    public var bytesPerPlaintext: Int {
        polyDegree * (63 - plaintextModulus.leadingZeroBitCount) / 8
    }

    public var description: String {
        "BFV(N=\(polyDegree), t=\(plaintextModulus), moduli=\(coefficientModuli))"
    }
}

/// `log2(x)` as a double, without Foundation.
@usableFromInline func log2Approx(_ x: UInt64) -> Double {
    guard x > 0 else { return -.infinity }
    let e = 63 - x.leadingZeroBitCount
    let mantissa = Double(x) / Double(UInt64(1) << UInt64(e))
    return Double(e) + log2Fraction(mantissa)
}

/// `log2(m)` for `m` in `[1, 2)`, by repeated squaring (52 bits of precision).
@usableFromInline func log2Fraction(_ m: Double) -> Double {
    var y = m
    var result = 0.0
    var bit = 0.5
    for _ in 0..<52 {
        y *= y
        if y >= 2 {
            y /= 2
            result += bit
        }
        bit /= 2
    }
    return result
}
