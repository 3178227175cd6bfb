//! End-to-end tests of the real process runner: real `sh` commands through the real `evo` helper.
//!
//! These pin what the timed runs rely on: exit statuses, output hashing, stderr tails without
//! deadlock, timeouts that also beat a TERM-ignoring command, cleanup of leftover processes, and a
//! max RSS that belongs to the command and not to evo.

use std::path::Path;
use std::time::{Duration, Instant};

use evo::measure::helper::{HelperArgs, HelperReport};
use evo::measure::record::{ExitStatus, RunRecord};
use evo::measure::runner::{RunSpec, Runner, RunnerError};
use evo::measure::spawn::ProcessRunner;
use rustix::process::{Pid, Signal, kill_process};
use sha2::{Digest, Sha256};

fn runner() -> ProcessRunner {
    ProcessRunner::with_helper(env!("CARGO_BIN_EXE_evo").into())
        .with_grace(Duration::from_millis(300))
}

fn spec(command: &str) -> RunSpec {
    RunSpec::new(command, Duration::from_secs(10))
}

fn run(spec: &RunSpec) -> RunRecord {
    runner().run(spec).unwrap_or_else(|error| panic!("{error}"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Allocates and touches `mib` MiB so this test process is really that large.
fn resident_ballast(mib: usize) -> Vec<u8> {
    let mut ballast = vec![0u8; mib << 20];
    for page in ballast.chunks_mut(4096) {
        page[0] = 1;
    }
    std::hint::black_box(ballast)
}

/// Runs `true` by forking directly from this process and reaping it with `wait4`.
#[expect(
    clippy::zombie_processes,
    reason = "reaped with wait4, which gives its rusage"
)]
fn max_rss_kib_of_direct_child() -> u64 {
    let child = std::process::Command::new("true")
        .spawn()
        .expect("spawn true");
    let mut status = 0;
    // SAFETY: plain data, filled in by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: our own unreaped child; valid pointers.
    let rc = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(rc, child.id() as libc::pid_t, "wait4 failed");
    usage.ru_maxrss as u64
}

#[test]
fn true_has_tiny_max_rss_even_when_evo_is_big() {
    let ballast = resident_ballast(512);
    let record = run(&spec("true"));
    let direct_kib = max_rss_kib_of_direct_child();
    eprintln!(
        "max RSS of `true`: {} KiB through the helper, {direct_kib} KiB forked directly from a \
         512 MiB process",
        record.rusage.max_rss_kib
    );
    assert_eq!(record.status, ExitStatus::Exited { code: 0 });
    assert!(record.succeeded());
    assert!(record.rusage.max_rss_kib > 0);
    assert!(record.rusage.max_rss_kib < 16 * 1024, "{record:?}");
    // The contrast: the reason the helper exists.
    assert!(
        direct_kib > 256 * 1024,
        "direct child max RSS {direct_kib} KiB"
    );
    drop(ballast);
}

#[test]
fn exit_code_is_reported_not_an_error() {
    let record = run(&spec("exit 3"));
    assert_eq!(record.status, ExitStatus::Exited { code: 3 });
    assert_eq!(record.status.shell_code(), 3);
    assert!(!record.succeeded());
    assert!(!record.timed_out);
}

#[test]
fn death_by_signal_is_reported_as_128_plus_n() {
    let record = run(&spec("kill -9 $$"));
    assert_eq!(record.status, ExitStatus::Signaled { signal: 9 });
    assert_eq!(record.status.shell_code(), 137);
}

#[test]
fn stdout_is_hashed_and_counted() {
    let record = run(&spec("printf abc"));
    assert_eq!(record.stdout_sha256, sha256_hex(b"abc"));
    assert_eq!(
        record.stdout_sha256,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(record.stdout_bytes, 3);
}

#[test]
fn noisy_stdout_and_stderr_do_not_deadlock_and_stderr_tail_holds_the_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec("seq 200000; seq -f 'line %g' 100000 >&2; seq 200000 | wc -l");
    spec.stderr_file = Some(dir.path().join("stderr.log"));
    let record = run(&spec);

    let mut expected_stdout: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    expected_stdout.push_str("200000\n");
    assert_eq!(record.stdout_bytes, expected_stdout.len() as u64);
    assert_eq!(record.stdout_sha256, sha256_hex(expected_stdout.as_bytes()));

    let tail = &record.stderr_tail;
    assert!(tail.len() <= 4096, "tail is {} bytes", tail.len());
    assert!(
        tail.starts_with("line "),
        "tail starts mid-line: {tail:.40?}"
    );
    assert!(tail.ends_with("line 99999\nline 100000\n"), "{tail:?}");
    let logged = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap();
    assert_eq!(logged.lines().count(), 100_000);
}

fn assert_quick_timeout(command: &str, expected_signal: i32) -> RunRecord {
    let started = Instant::now();
    let record = run(&RunSpec::new(command, Duration::from_millis(300)));
    let elapsed = started.elapsed();
    assert!(record.timed_out, "{record:?}");
    assert!(!record.succeeded());
    assert_eq!(
        record.status,
        ExitStatus::Signaled {
            signal: expected_signal
        }
    );
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    record
}

#[test]
fn timeout_terminates_the_command() {
    let record = assert_quick_timeout("sleep 30", libc::SIGTERM);
    assert!(record.wall_s >= 0.3 && record.wall_s < 2.0, "{record:?}");
}

#[test]
fn timeout_kills_a_command_that_ignores_term_after_the_grace() {
    let record = assert_quick_timeout("trap '' TERM; sleep 30", libc::SIGKILL);
    // 300 ms timeout + 300 ms grace before KILL.
    assert!(record.wall_s >= 0.59, "{record:?}");
}

fn process_is_gone(pid: &str) -> bool {
    // A zombie still has a /proc entry; a reaped process does not.
    !Path::new("/proc").join(pid).exists()
}

#[test]
fn background_leftover_is_reported_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec("sleep 30 & echo $!");
    spec.stdout_file = Some(dir.path().join("pid"));
    let started = Instant::now();
    let record = run(&spec);
    // The sleep held our stdout pipe open: returning quickly means it was killed.
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(record.leftover_processes, "{record:?}");
    assert!(record.succeeded());
    let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
    assert!(process_is_gone(pid.trim()), "sleep {pid} still exists");
}

#[test]
fn clean_command_has_no_leftovers() {
    let record = run(&spec("sleep 0.01 & wait; echo done"));
    assert!(!record.leftover_processes, "{record:?}");
}

#[test]
fn cpu_bound_command_reports_user_time_within_wall_time() {
    let record = run(&spec("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"));
    let usage = record.rusage;
    assert!(usage.user_s > 0.0, "{record:?}");
    // One single-threaded process cannot use more CPU than wall time (allow clock granularity).
    assert!(
        record.wall_s + 0.02 >= usage.user_s + usage.sys_s,
        "{record:?}"
    );
    assert!(usage.max_rss_kib > 0 && usage.max_rss_kib < 16 * 1024);
}

#[test]
fn cwd_and_env_are_applied_and_stdout_file_gets_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("out.log");
    let mut spec = spec("printf '%s|%s' \"$(pwd -P)\" \"$EVO_TEST_VALUE\"");
    spec.cwd = Some(dir.path().to_path_buf());
    spec.env.insert("EVO_TEST_VALUE".into(), "a b".into());
    spec.stdout_file = Some(log.clone());
    let record = run(&spec);
    let expected = format!("{}|a b", dir.path().canonicalize().unwrap().display());
    assert_eq!(std::fs::read_to_string(&log).unwrap(), expected);
    assert_eq!(record.stdout_sha256, sha256_hex(expected.as_bytes()));
}

#[test]
fn missing_helper_is_a_spawn_error() {
    let mut runner = ProcessRunner::with_helper("/nonexistent/evo".into());
    let error = runner.run(&spec("true")).unwrap_err();
    assert!(matches!(error, RunnerError::Spawn { .. }), "{error}");
    assert!(error.to_string().contains("`true`"), "{error}");
}

#[test]
fn helper_without_a_report_is_a_helper_error() {
    // `false` stands in for a helper that fails without writing a report.
    let mut runner = ProcessRunner::with_helper("/bin/false".into());
    let error = runner.run(&spec("true")).unwrap_err();
    assert!(matches!(error, RunnerError::Helper { .. }), "{error}");
}

#[test]
fn many_runs_reuse_one_runner() {
    let mut runner = runner();
    for code in 0..5 {
        let record = runner.run(&spec(&format!("exit {code}"))).unwrap();
        assert_eq!(record.status, ExitStatus::Exited { code });
    }
}

#[test]
fn process_escaping_the_group_is_reported_and_killed() {
    // `setsid` puts the sleep in its own session, out of reach of the group kill, with our stdout
    // pipe still open. Orphaned, it becomes the helper's child (subreaper), which kills it.
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec("setsid sleep 30 & echo $!; sleep 0.2");
    spec.stdout_file = Some(dir.path().join("pid"));
    let started = Instant::now();
    let record = run(&spec);
    // The sleep held our stdout pipe open: returning before the reader's grace means it was
    // killed, not waited out.
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(1800), "took {elapsed:?}");
    assert!(record.succeeded(), "{record:?}");
    assert!(record.leftover_processes, "{record:?}");
    assert!(
        !record.stderr_tail.contains("stopped reading"),
        "{record:?}"
    );
    let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
    assert!(process_is_gone(pid.trim()), "sleep {pid} still exists");
}

#[test]
fn term_to_the_helper_stops_the_command_group() {
    // What Ctrl-C on evo does: the helper must not die and leave the command running.
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let args = HelperArgs {
        report: report.clone(),
        timeout: Duration::from_secs(30),
        grace: Duration::from_millis(300),
        cwd: None,
        command: "sleep 30".into(),
        wrapper: Vec::new(),
    };
    let started = Instant::now();
    let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_evo"))
        .args(args.to_args())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // Our own unreaped child.
    kill_process(Pid::from_child(&helper), Signal::TERM).unwrap();
    assert!(helper.wait().unwrap().success());
    assert!(started.elapsed() < Duration::from_secs(3));
    let report: HelperReport = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(
        report.status,
        ExitStatus::Signaled {
            signal: libc::SIGTERM
        }
    );
    assert!(!report.timed_out);
}

#[test]
fn a_second_signal_to_the_helper_during_the_grace_does_not_stop_the_kill() {
    // Ctrl-C pressed twice: evo exits at the second, but its helper must still see the command's
    // group through TERM, grace and KILL rather than die between them and leave it running.
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let args = HelperArgs {
        report: report.clone(),
        timeout: Duration::from_secs(30),
        grace: Duration::from_millis(800),
        cwd: None,
        command: "trap '' TERM; sleep 30".into(),
        wrapper: Vec::new(),
    };
    let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_evo"))
        .args(args.to_args())
        .spawn()
        .unwrap();
    let pid = Pid::from_child(&helper);
    std::thread::sleep(Duration::from_millis(200));
    kill_process(pid, Signal::TERM).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    for signal in [Signal::INT, Signal::TERM] {
        kill_process(pid, signal).unwrap();
    }
    let status = helper.wait().unwrap();
    assert!(status.success(), "helper ended with {status}");
    let report: HelperReport = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(
        report.status,
        ExitStatus::Signaled {
            signal: libc::SIGKILL
        }
    );
    assert!(!report.timed_out);
}

#[test]
fn stdin_comes_from_the_stdin_file_or_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("brief.json");
    std::fs::write(&input, "{\"objective\": \"faster\"}\n").unwrap();
    let mut with_input = spec("cat");
    with_input.stdin_file = Some(input);
    let r = run(&with_input);
    assert_eq!(
        r.stdout_sha256,
        sha256_hex(b"{\"objective\": \"faster\"}\n")
    );
    let r = run(&spec("cat"));
    assert_eq!(r.stdout_bytes, 0);
    assert!(r.succeeded());
}

#[test]
fn a_sandboxed_run_writes_only_its_tree_and_its_leftovers_are_still_caught() {
    use evo::measure::sandbox::{Arm, SandboxPolicy, SandboxRequest};
    use evo::spec::modes::SandboxMode;
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("candidate");
    let other = work.path().join("baseline");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("secret"), "baseline output").unwrap();
    let request = SandboxRequest {
        mode: SandboxMode::On,
        secrets: vec![work.path().to_path_buf()],
        copies: work.path().join("copies"),
        ..SandboxRequest::default()
    };
    let policy = match SandboxPolicy::for_request(request) {
        Ok(policy) => policy,
        Err(why) => {
            // No sandbox on this machine: the refusal must say why.
            assert!(why.to_string().contains("bubblewrap"), "{why}");
            return;
        }
    };
    let mut build = spec(
        "cat ../baseline/secret; touch ../baseline/pwned; echo ok > inside; sleep 30 & echo started",
    );
    build.cwd = Some(tree.clone());
    build.sandbox = policy
        .for_build(&tree, Some(&tree), Arm::Candidate)
        .unwrap();
    let record = run(&build);
    assert!(record.succeeded(), "{record:?}");
    assert!(record.stderr_tail.contains("No such file"), "{record:?}");
    assert_eq!(
        std::fs::read_to_string(tree.join("inside")).unwrap(),
        "ok\n"
    );
    assert!(!other.join("pwned").exists(), "wrote into the other arm");
    assert!(record.leftover_processes, "{record:?}");
    assert!(record.rusage.max_rss_kib > 0, "{record:?}");
    // A timed run sees the built tree read-only: nothing it writes can reach the next run.
    let mut timed = spec("cat inside && echo cache > answers");
    timed.cwd = Some(tree.clone());
    timed.sandbox = policy.for_run(&tree, Some(&tree));
    let record = run(&timed);
    assert!(!record.succeeded(), "{record:?}");
    assert!(
        record.stderr_tail.contains("Read-only file system"),
        "{record:?}"
    );
    assert!(!tree.join("answers").exists());
}

/// The CPUs a process may run on, from its `/proc/<pid>/status` text.
fn cpus_allowed(status: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
}

#[test]
fn a_split_runner_keeps_evo_and_the_command_on_different_cpus_until_dropped() {
    use evo::measure::cpus;
    use evo::spec::modes::Affinity;
    // On a thread of its own: the pin is per thread, and the test harness's threads are shared.
    std::thread::spawn(|| {
        let all = cpus::allowed().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("status");
        let mut runner = runner().with_affinity(Affinity::Split);
        let Some(split) = runner.cpu_split().cloned() else {
            assert!(all.len() < 2, "{all:?} can be split");
            return;
        };
        assert_eq!(
            cpus::allowed().unwrap(),
            split.evo,
            "evo's thread is pinned"
        );
        let record = runner
            .run(&RunSpec {
                stdout_file: Some(out.clone()),
                ..spec("cat /proc/self/status")
            })
            .unwrap();
        assert!(record.succeeded());
        let status = std::fs::read_to_string(&out).unwrap();
        let list: Vec<String> = split.command.iter().map(|c| c.to_string()).collect();
        // The kernel writes ranges ("1-3"); compare with the same CPUs read back as a list.
        let seen = cpus_allowed(&status);
        let expanded: Vec<String> = seen
            .split(',')
            .flat_map(|part| match part.split_once('-') {
                Some((a, b)) => (a.parse::<usize>().unwrap()..=b.parse().unwrap())
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>(),
                None => vec![part.to_string()],
            })
            .collect();
        assert_eq!(expanded, list, "the command runs on the other CPUs: {seen}");
        assert!(!split.command.contains(&split.evo[0]));
        drop(runner);
        assert_eq!(
            cpus::allowed().unwrap(),
            all,
            "dropping the runner frees evo again"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn steal_time_is_recorded_where_the_kernel_reports_it() {
    let record = run(&spec("true"));
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let has_steal = stat
        .lines()
        .next()
        .is_some_and(|l| l.split_whitespace().count() > 8);
    assert_eq!(record.steal_s.is_some(), has_steal, "{:?}", record.steal_s);
    assert!(record.steal_s.unwrap_or(0.0) >= 0.0);
}
