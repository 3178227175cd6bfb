//! The real `evo` binary running `evo bench` on real (tiny) commands.

use assert_cmd::Command;

fn evo() -> Command {
    Command::cargo_bin("evo").expect("the evo binary is built for integration tests")
}

/// The JSON report of a 6-pair bench of `true` against itself with `extra` arguments, written
/// into `dir` (one file per distinct `extra`).
fn quick_bench_report(dir: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let json = dir.join(format!("{}.json", extra.join("_").replace('-', "")));
    let out = evo()
        .args(["bench", "--baseline", "true", "--candidate", "true"])
        .args(["--pairs", "6", "--aa-pairs", "6", "--warmup", "0"])
        .args(extra)
        .arg("--export-json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(json.is_file(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[test]
fn zero_pairs_is_a_usage_error() {
    evo()
        .args([
            "bench",
            "--baseline",
            "true",
            "--candidate",
            "true",
            "--pairs",
            "0",
        ])
        .assert()
        .code(evo::exit_codes::USAGE_ERROR);
}

#[test]
fn a_bad_min_effect_is_a_usage_error_that_says_why() {
    let out = evo()
        .args(["bench", "--baseline", "true", "--candidate", "true"])
        .args(["--min-effect", "lots"])
        .assert()
        .code(evo::exit_codes::USAGE_ERROR)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("percentage like 1%"), "{stderr}");
}

#[test]
fn a_target_effect_not_above_the_min_effect_is_a_usage_error_that_says_why() {
    for target in ["1%", "0.5%"] {
        let out = evo()
            .args(["bench", "--baseline", "true", "--candidate", "true"])
            .args(["--min-effect", "1%", "--target-effect", target])
            .assert()
            .code(evo::exit_codes::USAGE_ERROR)
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("must be above --min-effect"), "{stderr}");
    }
}

#[test]
fn a_failing_command_names_itself_and_shows_its_stderr() {
    let out = evo()
        .args(["bench", "--baseline", "true"])
        .args(["--candidate", "echo 'oops: missing input' >&2; exit 7"])
        .args(["--pairs", "6", "--aa-pairs", "6", "--warmup", "0"])
        .assert()
        .code(evo::exit_codes::INTERNAL_ERROR)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("candidate command failed (exit code 7)"),
        "{stderr}"
    );
    assert!(stderr.contains("oops: missing input"), "{stderr}");
}

#[test]
fn a_halved_sleep_measures_about_twice_as_fast_with_all_figures() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let out = evo()
        .args([
            "bench",
            "--baseline",
            "sleep 0.04",
            "--candidate",
            "sleep 0.02",
        ])
        .args([
            "--pairs",
            "6",
            "--aa-pairs",
            "6",
            "--warmup",
            "1",
            "--seed",
            "5",
        ])
        .arg("--export-json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A real speedup: accepted, or inconclusive where the machine's load biases the 6-pair A/A
    // check; never rejected.
    let code = out.status.code();
    assert!(
        code == Some(evo::exit_codes::ACCEPTED) || code == Some(evo::exit_codes::INCONCLUSIVE),
        "exit {code:?}\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for label in ["speedup", "interval", "noise floor", "looks", "verdict"] {
        assert!(stdout.contains(label), "missing {label}:\n{stdout}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let median = report["median"].as_f64().unwrap();
    assert!(median > 1.5 && median < 2.5, "median {median}");
    assert_eq!(report["pairs"].as_array().unwrap().len(), 6);
    assert_eq!(report["warmups"].as_array().unwrap().len(), 2);
    assert_eq!(report["settings"]["mde_seed"], 5);
    // Runs go through the helper, so even `sleep` reports its own small peak, not evo's.
    let rss = report["pairs"][0]["candidate"]["rusage"]["max_rss_kib"]
        .as_u64()
        .unwrap();
    assert!(rss > 0 && rss < 16 * 1024, "max RSS {rss} KiB");
}

/// With `--affinity split` the report records which CPUs evo and the commands ran on (that the
/// commands really run there is `runner_real`'s test); `off` records nothing.
#[test]
fn the_cpu_split_is_recorded_in_the_report() {
    let cpus = evo::measure::cpus::allowed().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = |affinity: &str| quick_bench_report(dir.path(), &["--affinity", affinity]);
    let off = report("off");
    assert!(
        off["environment"].get("cpus").is_none(),
        "{}",
        off["environment"]
    );
    let split = report("split");
    if cpus.len() < 2 {
        assert!(split["environment"].get("cpus").is_none());
        return;
    }
    let recorded = &split["environment"]["cpus"];
    assert_eq!(recorded["evo"], serde_json::json!([cpus[0]]), "{recorded}");
    assert_eq!(
        recorded["command"],
        serde_json::json!(cpus[1..]),
        "{recorded}"
    );
}

#[test]
fn the_quiet_wait_gives_up_at_its_limit_on_a_busy_machine_and_says_so() {
    // One busy loop per CPU: whatever else runs, the machine is not quiet.
    let cpus = evo::measure::cpus::allowed().unwrap();
    let hogs: Vec<std::process::Child> = (0..cpus.len())
        .map(|_| {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let report = |wait: &str| quick_bench_report(dir.path(), &["--quiet-wait", wait]);
    let waited = report("2");
    let none = report("0");
    for mut hog in hogs {
        let _ = hog.kill();
        let _ = hog.wait();
    }
    let quiet = &waited["environment"]["quiet"];
    assert_eq!(quiet["quiet"], false, "{quiet}");
    assert!(quiet["waited_s"].as_f64().unwrap() >= 1.9, "{quiet}");
    assert!(
        (waited["warnings"].as_array().unwrap().iter())
            .any(|w| w.as_str().unwrap().contains("not quiet")),
        "{:#}",
        waited["warnings"]
    );
    // Without a wait, nothing is claimed about it.
    assert!(
        none["environment"].get("quiet").is_none(),
        "{}",
        none["environment"]
    );
}

#[test]
fn env_pad_gives_every_run_the_pad_variable_and_off_gives_none() {
    // Fails unless the variable is set (it may be empty: its length is random from 0).
    let needs_pad = r#"test -n "${EVO_ENV_PAD+set}""#;
    let run = |mode: &str| {
        evo()
            .args(["bench", "--baseline", needs_pad, "--candidate", needs_pad])
            .args(["--pairs", "6", "--aa-pairs", "6", "--warmup", "0"])
            .args(["--env-pad", mode])
            .output()
            .unwrap()
    };
    let on = run("on");
    assert_ne!(
        on.status.code(),
        Some(evo::exit_codes::INTERNAL_ERROR),
        "{}",
        String::from_utf8_lossy(&on.stderr)
    );
    let off = run("off");
    assert_eq!(
        off.status.code(),
        Some(evo::exit_codes::INTERNAL_ERROR),
        "{}",
        String::from_utf8_lossy(&off.stderr)
    );
}
