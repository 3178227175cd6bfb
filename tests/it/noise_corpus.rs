//! The real-noise corpus (validation/noise/, issue 44 item 3): what `scripts/record-noise`
//! recorded, read through the calibration benchmark's own loader (`benches/calibration/real.rs`),
//! which these tests also hold to its contract. The figures the corpus gives are the benchmark's
//! to print (docs/calibration.md), not asserted here.

#[path = "../../benches/calibration/real.rs"]
#[allow(dead_code)]
mod real;

use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::util::write;

const HEADER: &str =
    "phase,pair,first,seed,arm,wall_s,user_s,sys_s,voluntary_cs,involuntary_cs,steal_s";

fn manifest(files: &[&str]) -> String {
    let entries: Vec<String> = (files.iter())
        .map(|f| {
            format!(
                r#"{{"file": "{f}", "workload": "w", "load": "quiet", "command": "c",
                "min_effect": 0.01, "started": "t", "ended": "t", "load_1min_before": 0.1,
                "load_1min_after": 0.2, "cpus": 2, "cpu": "x", "evo_commit": "abc"}}"#
            )
        })
        .collect();
    format!(r#"{{"recordings": [{}]}}"#, entries.join(","))
}

#[test]
fn the_committed_corpus_holds_every_workload_quiet_and_loaded_with_whole_pairs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/noise");
    let recordings = real::load(&dir).unwrap();
    for workload in ["trainer", "ckernels", "spin"] {
        for load in ["quiet", "hog"] {
            let r = (recordings.iter())
                .find(|r| r.workload == workload && r.load == load)
                .unwrap_or_else(|| panic!("no {workload} recording under load {load}"));
            let pairs = r.pair_logs(real::Metric::Wall);
            // Every run is in a pair: the recorder refuses a failed run, so none is missing.
            assert_eq!(2 * pairs.len(), r.runs.len(), "{}", r.file);
            assert!(pairs.len() >= 60, "{}: {} pairs", r.file, pairs.len());
            assert_eq!(r.pair_logs(real::Metric::Cpu).len(), pairs.len());
            assert!(pairs.iter().all(|x| x.is_finite()), "{}", r.file);
        }
    }
}

#[test]
fn pairs_are_matched_by_phase_and_index_whatever_the_rows_order() {
    let dir = tempfile::tempdir().unwrap();
    // Rows out of order: the comparison pair before the A/A pair, the candidate before its
    // baseline. Pair (aa, 0) is 2.0 s against 1.0 s: ln 2; pair (pairs, 0) is 1.0 against 4.0.
    let rows = [
        "pairs,0,baseline,7,candidate,4.0,3.5,0.5,1,2,",
        "aa,0,candidate,5,candidate,1.0,0.9,0.1,1,2,",
        "pairs,0,baseline,7,baseline,1.0,0.5,0.5,1,2,",
        "aa,0,candidate,5,baseline,2.0,1.0,0.0,1,2,0.001",
    ];
    write(
        &dir.path().join("r.csv"),
        &format!("{HEADER}\n{}\n", rows.join("\n")),
    );
    write(&dir.path().join("manifest.json"), &manifest(&["r.csv"]));
    let recordings = real::load(dir.path()).unwrap();
    let wall = recordings[0].pair_logs(real::Metric::Wall);
    assert_eq!(wall.len(), 2);
    assert!((wall[0] - 2f64.ln()).abs() < 1e-12, "{wall:?}");
    assert!((wall[1] - 0.25f64.ln()).abs() < 1e-12, "{wall:?}");
    // User plus system time: 1.0 / 1.0 and 1.0 / 4.0.
    let cpu = recordings[0].pair_logs(real::Metric::Cpu);
    assert!(
        cpu[0].abs() < 1e-12 && (cpu[1] - 0.25f64.ln()).abs() < 1e-12,
        "{cpu:?}"
    );
}

#[test]
fn a_corrupt_recording_is_refused_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("manifest.json"), &manifest(&["r.csv"]));
    for (row, says) in [
        ("aa,0,baseline,5,baseline,abc,1,0,1,2,", "wall_s"),
        ("aa,0,baseline,5,baseline,0,0,0,1,2,", "no time"),
        ("aa,0,baseline,5,other,1,1,0,1,2,", "arm `other`"),
    ] {
        write(&dir.path().join("r.csv"), &format!("{HEADER}\n{row}\n"));
        let err = real::load(dir.path()).unwrap_err();
        assert!(err.contains("r.csv line 2") && err.contains(says), "{err}");
    }
    std::fs::remove_file(dir.path().join("r.csv")).unwrap();
    let err = real::load(dir.path()).unwrap_err();
    assert!(err.contains("r.csv"), "{err}");
}

#[test]
fn a_block_draw_takes_consecutive_pairs_wrapping_around_with_a_sign_per_block_and_shifts_them() {
    // Pairs 1..=7 (no zero, so a flipped sign shows).
    let logs: Vec<f64> = (1..=7).map(|i| i as f64).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let (shift, mut flipped, mut kept) = (0.5, 0, 0);
    for _ in 0..200 {
        let drawn = real::block_draw(&logs, 12, 5, real::Null::Flip, shift, &mut rng);
        assert_eq!(drawn.len(), 12);
        // Within a block (pairs 0–4, 5–9, 10–11) one sign, and each value follows the one
        // before, 7 wrapping to 1.
        for block in drawn.chunks(5) {
            let unshifted: Vec<f64> = block.iter().map(|x| x - shift).collect();
            let sign = unshifted[0].signum();
            assert!(unshifted.iter().all(|x| x.signum() == sign), "{drawn:?}");
            for w in unshifted.windows(2) {
                let (a, b) = ((sign * w[0]) as usize, (sign * w[1]) as usize);
                assert_eq!(a % 7 + 1, b, "{drawn:?}");
            }
            if sign < 0.0 { flipped += 1 } else { kept += 1 }
        }
    }
    // A coin per block (seeded: about 300 each way); a sign never or always flipped fails.
    assert!(
        flipped > 240 && kept > 240,
        "{flipped} flipped, {kept} kept"
    );
}
