//! Tests of the campaign file's sections: their defaults and what each refuses.

use super::*;

fn confirm(json: &str) -> Result<ConfirmSettings, serde_json::Error> {
    serde_json::from_str(json)
}

#[test]
fn sandbox_limits_have_defaults_and_refuse_zero_and_unknown_keys() {
    let sandbox = |json: &str| serde_json::from_str::<SandboxSettings>(json);
    assert_eq!(sandbox("{}").unwrap().limits.tmp_mib.get(), 4096);
    let set = sandbox(r#"{ "limits": { "tmp_mib": 64 } }"#).unwrap();
    assert_eq!(set.limits.tmp_mib.get(), 64);
    // A tmpfs of size 0 would have no limit at all.
    assert!(sandbox(r#"{ "limits": { "tmp_mib": 0 } }"#).is_err());
    assert!(sandbox(r#"{ "limits": { "file_mib": 0 } }"#).is_err());
    assert!(sandbox(r#"{ "limits": { "cpu_s": 0 } }"#).is_err());
    assert!(sandbox(r#"{ "limits": { "memory_mib": 0 } }"#).is_err());
    assert!(sandbox(r#"{ "limits": { "pids": 0 } }"#).is_err());
    let set = sandbox(r#"{ "limits": { "file_mib": 2, "cpu_s": 3 } }"#).unwrap();
    assert_eq!((set.limits.file_mib.get(), set.limits.cpu_s.get()), (2, 3));
    assert!(sandbox(r#"{ "limits": { "memory": 1 } }"#).is_err());
}

#[test]
fn the_target_effect_defaults_to_half_again_the_min_effect_and_must_exceed_it() {
    let default = confirm(r#"{ "min_effect": 0.02 }"#).unwrap();
    assert!((default.target_effect() - 0.03).abs() < 1e-12);
    let set = confirm(r#"{ "min_effect": 0.02, "target_effect": 0.05 }"#).unwrap();
    assert!((set.target_effect() - 0.05).abs() < 1e-12);
    for bad in [0.02, 0.01] {
        let err = confirm(&format!(
            r#"{{ "min_effect": 0.02, "target_effect": {bad} }}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("must be above min_effect"), "{err}");
    }
}

#[test]
fn max_pairs_defaults_to_no_extension_and_must_not_be_below_pairs() {
    let none = confirm(r#"{ "pairs": 9 }"#).unwrap();
    assert_eq!((none.max_pairs, none.max_pairs()), (None, 9));
    let capped = confirm(r#"{ "pairs": 9, "max_pairs": 120 }"#).unwrap();
    assert_eq!(capped.max_pairs(), 120);
    let err = confirm(r#"{ "pairs": 21, "max_pairs": 9 }"#).unwrap_err();
    assert!(
        err.to_string()
            .contains("max_pairs (9) is below pairs (21)"),
        "{err}"
    );
    assert!(confirm(r#"{ "max_pairs": 3 }"#).is_err());
    assert!(confirm(r#"{ "pairs": 9, "max_pair": 30 }"#).is_err());
}
