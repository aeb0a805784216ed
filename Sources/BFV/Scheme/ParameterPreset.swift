/// The reference library's predefined parameter sets (SPEC-HE §1), with their exact moduli.
public enum ParameterPreset: String, CaseIterable, Sendable {
    case n_4096_logq_27_28_28_logt_4
    case n_4096_logq_27_28_28_logt_5
    case n_4096_logq_27_28_28_logt_6
    case n_4096_logq_27_28_28_logt_13
    case n_4096_logq_27_28_28_logt_16
    case n_4096_logq_27_28_28_logt_17
    case n_4096_logq_16_33_33_logt_4
    case n_8192_logq_28_60_60_logt_20
    case n_8192_logq_29_60_60_logt_15
    case n_8192_logq_3x55_logt_24
    case n_8192_logq_3x55_logt_29
    case n_8192_logq_3x55_logt_30
    case n_8192_logq_3x55_logt_42
    case n_8192_logq_40_60_60_logt_26
    case insecure_n_8_logq_5x18_logt_5
    case insecure_n_16_logq_60_logt_15
    case insecure_n_512_logq_4x60_logt_20

    private static let q27x28x28: [UInt64] = [134_176_769, 268_369_921, 268_361_729]
    private static let q3x55: [UInt64] = [36_028_797_018_652_673, 36_028_797_017_571_329, 36_028_797_017_456_641]
    private static let q60a: UInt64 = 1_152_921_504_606_830_593
    private static let q60b: UInt64 = 1_152_921_504_606_748_673

    /// Ring degree N.
    public var polyDegree: Int {
        switch self {
        case .insecure_n_8_logq_5x18_logt_5: return 8
        case .insecure_n_16_logq_60_logt_15: return 16
        case .insecure_n_512_logq_4x60_logt_20: return 512
        case .n_8192_logq_28_60_60_logt_20, .n_8192_logq_29_60_60_logt_15, .n_8192_logq_3x55_logt_24,
             .n_8192_logq_3x55_logt_29, .n_8192_logq_3x55_logt_30, .n_8192_logq_3x55_logt_42,
             .n_8192_logq_40_60_60_logt_26:
            return 8192
        default: return 4096
        }
    }

    /// Plaintext modulus t.
    public var plaintextModulus: UInt64 {
        switch self {
        case .n_4096_logq_27_28_28_logt_4, .n_4096_logq_16_33_33_logt_4: return 11
        case .n_4096_logq_27_28_28_logt_5, .insecure_n_8_logq_5x18_logt_5: return 17
        case .n_4096_logq_27_28_28_logt_6: return 37
        case .n_4096_logq_27_28_28_logt_13: return 4099
        case .n_4096_logq_27_28_28_logt_16: return 40961
        case .n_4096_logq_27_28_28_logt_17: return 65537
        case .n_8192_logq_28_60_60_logt_20: return 557_057
        case .n_8192_logq_29_60_60_logt_15: return 16411
        case .n_8192_logq_3x55_logt_24: return 8_404_993
        case .n_8192_logq_3x55_logt_29: return 268_582_913
        case .n_8192_logq_3x55_logt_30: return 536_903_681
        case .n_8192_logq_3x55_logt_42: return 2_199_023_288_321
        case .n_8192_logq_40_60_60_logt_26: return 33_832_961
        case .insecure_n_16_logq_60_logt_15: return 16417
        case .insecure_n_512_logq_4x60_logt_20: return 525_313
        }
    }

    /// All coefficient moduli in preset order (the last is the special modulus p).
    public var coefficientModuli: [UInt64] {
        switch self {
        case .n_4096_logq_27_28_28_logt_4, .n_4096_logq_27_28_28_logt_5, .n_4096_logq_27_28_28_logt_6,
             .n_4096_logq_27_28_28_logt_13, .n_4096_logq_27_28_28_logt_16, .n_4096_logq_27_28_28_logt_17:
            return Self.q27x28x28
        case .n_4096_logq_16_33_33_logt_4: return [40961, 8_589_852_673, 8_589_844_481]
        case .n_8192_logq_28_60_60_logt_20: return [268_369_921, Self.q60a, Self.q60b]
        case .n_8192_logq_29_60_60_logt_15: return [536_690_689, Self.q60a, Self.q60b]
        case .n_8192_logq_3x55_logt_24, .n_8192_logq_3x55_logt_29, .n_8192_logq_3x55_logt_30,
             .n_8192_logq_3x55_logt_42:
            return Self.q3x55
        case .n_8192_logq_40_60_60_logt_26: return [1_099_511_480_321, Self.q60a, Self.q60b]
        case .insecure_n_8_logq_5x18_logt_5: return [131_249, 131_297, 131_441, 131_489, 131_617]
        case .insecure_n_16_logq_60_logt_15: return [Self.q60a]
        case .insecure_n_512_logq_4x60_logt_20:
            return [576_460_752_303_436_801, 576_460_752_303_439_873, 576_460_752_303_447_041, 576_460_752_303_471_617]
        }
    }

    /// Security level the reference assigns.
    public var securityLevel: SecurityLevel {
        rawValue.hasPrefix("insecure") ? .unchecked : .quantum128
    }
}
