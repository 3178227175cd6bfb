//! The trust boundary, tried as an attacker with root inside its build would: escape the sandbox,
//! read evo's signing key, the holdouts and the campaign, read evo's environment, find evo's
//! processes, leave a daemon that renames itself and hides as a zombie, poison a writable cache
//! the other arm reads, and have the agent itself read what it must not.
//!
//! Every probe prints `LEAKED:<what>` when it gets what it must not and `PROBE-RAN` so a test can
//! tell a probe that never ran from one that found nothing. These tests need bubblewrap (the CI
//! installs it); without it they say so and return.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;

use util::cpairs::{HOLDOUTS, HOT_LINE, MEMO, WORKLOAD};
use util::{evo, fixture_repo, git, snapshot, text, write};

/// Stands for the fixture's cache folder in extra campaign text.
const CACHE: &str = "@CACHE@";

/// A variable in evo's environment that no code under test may see.
const TOKEN: &str = "tok-SECRET-4242";

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    camp: PathBuf,
    /// Outside every tree.
    outside: PathBuf,
    /// evo's default key folder for these runs (`EVO_KEY_DIR`).
    key_dir: PathBuf,
    /// The campaign's own key.
    campaign_key: PathBuf,
    cache: PathBuf,
}

impl Fixture {
    fn new(extra_campaign: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fixture_repo("cpairs", &repo);
        let camp = dir.path().join("camp");
        let outside = dir.path().join("outside");
        let key_dir = dir.path().join("evo-keys");
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(&cache).unwrap();
        write(&cache.join("lib.txt"), "the baseline's library\n");
        // The patches here probe their surroundings on purpose, to test the boundary: the lane
        // probes gate would stop them before they run.
        write(
            &camp.join("workload.json"),
            &util::cpairs::allow_probes(WORKLOAD, &["/proc/", "prctl"]),
        );
        write(&camp.join("holdouts.json"), HOLDOUTS);
        let keygen = |out: &Path| {
            let o = evo().args(["keygen", "--out"]).arg(out).output().unwrap();
            assert!(o.status.success(), "{}", text(&o));
        };
        keygen(&key_dir);
        keygen(&camp.join("keys"));
        let extra_campaign = extra_campaign.replace(CACHE, &cache.display().to_string());
        let campaign = format!(
            r#"{{ "name": "boundary", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "holdouts": "holdouts.json", "key": "keys/signing.key",
  "confirm": {{ "pairs": 6, "aa_pairs": 6 }}, "search": {{ "pairs": 2 }},
  "output": "receipts"{extra_campaign} }}"#
        );
        write(&camp.join("campaign.json"), &campaign);
        Fixture {
            _dir: dir,
            repo,
            campaign_key: camp.join("keys/signing.key"),
            camp,
            outside,
            key_dir,
            cache,
        }
    }

    /// A shell probe that tries everything this suite forbids and prints what it got.
    fn probe(&self) -> String {
        let secrets = [
            ("campaign-key", self.campaign_key.clone()),
            ("default-key", self.key_dir.join("signing.key")),
            ("holdouts", self.camp.join("holdouts.json")),
            ("campaign", self.camp.join("campaign.json")),
            ("repository", self.repo.join("prog.c")),
        ];
        let mut lines = vec!["#!/bin/sh".to_string(), "echo PROBE-RAN".to_string()];
        for (name, path) in secrets {
            lines.push(format!(
                "if cat '{}' >/dev/null 2>&1; then echo LEAKED:{name}; fi",
                path.display()
            ));
        }
        lines.extend([
            format!("if env | grep -q '{TOKEN}'; then echo LEAKED:environment; fi"),
            "if cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -q '__exec[-]helper'; \
             then echo LEAKED:evo-processes; fi"
                .to_string(),
            "umount /tmp 2>/dev/null && echo LEAKED:umount".to_string(),
            "mount -o remount,rw,bind / 2>/dev/null && echo LEAKED:remount".to_string(),
            "mount -o remount,rw / 2>/dev/null && echo LEAKED:remount-root".to_string(),
            format!(
                "touch '{}/escaped' 2>/dev/null && echo LEAKED:write-outside",
                self.outside.display()
            ),
            "touch /usr/escaped 2>/dev/null && echo LEAKED:write-usr".to_string(),
            "if [ \"$(id -u)\" = 0 ]; then echo LEAKED:root; fi".to_string(),
            "if grep -q '^CapEff:.*[1-9a-f]' /proc/self/status; then echo LEAKED:caps; fi"
                .to_string(),
            "if [ -e /dev/vda ] || [ -e /dev/sda ]; then echo LEAKED:disk; fi".to_string(),
            "exit 0".to_string(),
        ]);
        lines.join("\n") + "\n"
    }

    /// A patch with `files` added and `edits` made (as `patch_by_editing`), as `git diff`.
    fn patch(&self, name: &str, files: &[(&str, &str)], edits: &[(&str, &str, &str)]) -> PathBuf {
        for (file, content) in files {
            write(&self.repo.join(file), content);
        }
        for (file, old, new) in edits {
            let path = self.repo.join(file);
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains(old), "{file} does not contain {old:?}");
            std::fs::write(&path, text.replacen(old, new, 1)).unwrap();
        }
        git(&self.repo, &["add", "-A"]);
        let diff = git(&self.repo, &["diff", "--cached", "--binary"]);
        git(&self.repo, &["reset", "-q", "--hard"]);
        let path = self.camp.join(name);
        write(&path, &diff);
        path
    }

    /// The prying patch without the probes that would change the host when they succeed (mounts,
    /// a write to `/usr`): for the run without the sandbox, where they would.
    fn unsandboxed_probe_patch(&self) -> PathBuf {
        let probe: String = self
            .probe()
            .lines()
            .filter(|l| !l.contains("mount") && !l.contains("/usr/escaped"))
            .map(|l| format!("{l}\n"))
            .collect();
        self.patch_with_probe("harmless.patch", &probe)
    }

    /// The memo speedup, with the probe run by the build, the tests, the checks and the timed
    /// runs (all on stderr, where logs and receipts quote it).
    fn prying_patch(&self) -> PathBuf {
        self.patch_with_probe("prying.patch", &self.probe())
    }

    fn patch_with_probe(&self, name: &str, probe: &str) -> PathBuf {
        let makefile = "prog: prog.c\n\t-@sh probe.sh >&2\n\tcc -O2 -o prog prog.c\n";
        self.patch(
            name,
            &[("probe.sh", probe)],
            &[
                ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
                ("prog.c", "static unsigned long work(", MEMO),
                (
                    "prog.c",
                    "int main(int argc, char **argv) {\n",
                    "int main(int argc, char **argv) {\n    system(\"sh probe.sh >&2\");\n",
                ),
                (
                    "Makefile",
                    "prog: prog.c\n\tcc -O2 -o prog prog.c\n",
                    makefile,
                ),
            ],
        )
    }

    fn evo(&self) -> std::process::Command {
        let mut cmd = evo();
        cmd.env("EVO_KEY_DIR", &self.key_dir)
            .env("EVO_TEST_TOKEN", TOKEN);
        cmd
    }

    fn confirm(&self, patch: &Path) -> Output {
        self.confirm_with(patch, "on")
    }

    /// `evo confirm PATCH --sandbox MODE`; the repository must be unchanged after it.
    fn confirm_with(&self, patch: &Path, sandbox: &str) -> Output {
        let before = snapshot(&self.repo);
        let out = self
            .evo()
            .arg("confirm")
            .arg(patch)
            .arg("--campaign")
            .arg(self.camp.join("campaign.json"))
            .args(["--sandbox", sandbox])
            .output()
            .unwrap();
        assert_eq!(before, snapshot(&self.repo), "{}", text(&out));
        out
    }

    /// Every file evo wrote for this campaign, as text (logs, results, receipts, PR text).
    fn everything_written(&self) -> String {
        let mut all = String::new();
        let mut stack = vec![self.camp.join("receipts")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Ok(bytes) = std::fs::read(&path) {
                    all.push_str(&String::from_utf8_lossy(&bytes));
                    all.push('\n');
                }
            }
        }
        all
    }

    /// The lines of a private key file's PEM body (what a leak would carry).
    fn key_lines(&self) -> Vec<String> {
        [&self.campaign_key, &self.key_dir.join("signing.key")]
            .iter()
            .flat_map(|p| {
                std::fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .filter(|l| !l.starts_with("-----"))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// The lines where a probe said it got something (not the probe's own source, which the patch
/// quotes).
fn leaks(written: &str) -> Vec<&str> {
    written
        .lines()
        .filter(|l| l.contains("LEAKED:") && !l.contains("echo LEAKED:"))
        .collect()
}

fn bubblewrap_works() -> bool {
    let works = evo::measure::sandbox::probe().is_ok();
    if !works {
        eprintln!("skipped: bubblewrap cannot build a sandbox on this machine");
    }
    works
}

#[test]
fn root_inside_the_sandbox_reads_no_secret_escapes_nowhere_and_sees_no_other_process() {
    if !bubblewrap_works() {
        return;
    }
    let f = Fixture::new("");
    let out = f.confirm(&f.prying_patch());
    let written = f.everything_written();
    assert!(
        written.contains("PROBE-RAN"),
        "the probe never ran\n{}",
        text(&out)
    );
    let leaks = leaks(&written);
    assert!(leaks.is_empty(), "{leaks:#?}\n{}", text(&out));
    for line in f.key_lines() {
        assert!(!written.contains(&line), "a key line was written: {line}");
    }
    assert!(!f.outside.join("escaped").exists());
    assert!(!Path::new("/usr/escaped").exists());
    // The memo is a real speedup: a probe that finds nothing does not stop it.
    assert_ne!(out.status.code(), Some(2), "{}", text(&out));
    assert_ne!(out.status.code(), Some(1), "{}", text(&out));
}

#[test]
fn the_environment_of_code_under_test_is_an_allow_list_recorded_in_the_result() {
    if !bubblewrap_works() {
        return;
    }
    let f = Fixture::new("");
    let out = f.confirm(&f.prying_patch());
    let (_, result) = util::first_result(&f.camp).expect("a result");
    let env = result["sandbox"]["environment"]
        .as_object()
        .unwrap_or_else(|| panic!("no environment recorded\n{}", text(&out)));
    assert!(env.contains_key("PATH"), "{env:?}");
    assert_eq!(env["TMPDIR"], "/tmp");
    assert!(!env.contains_key("EVO_TEST_TOKEN"), "{env:?}");
    assert!(!env.contains_key("EVO_KEY_DIR"), "{env:?}");
}

/// A daemon that double-forks into its own session, renames itself, lets its leader thread exit
/// (a process scan by state reads it as a zombie) and, from a second thread, stops every process
/// it can find working in the baseline's tree.
const DAEMON: &str = r#"#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <dirent.h>

static void *hunt(void *arg) {
    (void)arg;
    for (;;) {
        DIR *d = opendir("/proc");
        struct dirent *e;
        char link[256], cwd[4096];
        while (d && (e = readdir(d))) {
            snprintf(link, sizeof link, "/proc/%s/cwd", e->d_name);
            ssize_t n = readlink(link, cwd, sizeof cwd - 1);
            if (n > 0) {
                cwd[n] = 0;
                if (strstr(cwd, "/baseline")) kill(atoi(e->d_name), SIGSTOP);
            }
        }
        if (d) closedir(d);
        usleep(1000);
    }
    return 0;
}

static void start_daemon(void) {
    if (fork() == 0) {
        setsid();
        if (fork() == 0) {
            prctl(PR_SET_NAME, "kworker/0:1", 0, 0, 0);
            pthread_t t;
            pthread_create(&t, 0, hunt, 0);
            pthread_exit(0);
        }
        _exit(0);
    }
}

int main(int argc, char **argv) {
    if (argc == 3) start_daemon();
"#;

#[test]
fn a_renamed_daemon_hiding_as_a_zombie_is_counted_and_stops_nothing_of_the_baseline() {
    if !bubblewrap_works() {
        return;
    }
    let f = Fixture::new("");
    let patch = f.patch(
        "daemon.patch",
        &[],
        &[
            ("prog.c", "int main(int argc, char **argv) {\n", DAEMON),
            (
                "Makefile",
                "prog: prog.c\n\tcc -O2 -o prog prog.c\n",
                "prog: prog.c\n\tcc -O2 -pthread -o prog prog.c\n",
            ),
        ],
    );
    let out = f.confirm(&patch);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let (_, result) = util::first_result(&f.camp).expect("a result");
    let gate = result["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "leftover processes")
        .cloned()
        .unwrap_or_else(|| panic!("no leftover gate\n{}", text(&out)));
    assert_eq!(gate["status"], "failed", "{gate}");
    assert_ne!(result["verdict"], "accepted");
}

#[test]
fn a_candidate_build_cannot_poison_a_writable_cache_for_the_baseline() {
    if !bubblewrap_works() {
        return;
    }
    // Both ways a candidate's build gets its private cache: a copy-on-write overlay where this
    // machine can mount one (as root), and a plain copy (`EVO_CACHE_COPIES=copy`, or no
    // privilege to mount).
    let scratch = tempfile::tempdir().unwrap();
    let overlays = evo::measure::overlay::probe(scratch.path()).is_ok();
    if !overlays {
        eprintln!("this machine cannot mount overlays: only the copy is tried");
    }
    for copy in [false, true] {
        let f = Fixture::new(&format!(r#", "sandbox": {{ "writable": ["{CACHE}"] }}"#));
        let cache = f.cache.display();
        // The build says how its cache is mounted (`- overlay` in the candidate's when overlaid).
        let makefile = format!(
            "prog: prog.c\n\
             \t@grep -F ' {cache} ' /proc/self/mountinfo >&2\n\
             \t@grep -q \"baseline's library\" '{cache}/lib.txt' || {{ echo 'no cache copy' >&2; exit 1; }}\n\
             \t@echo 'slowed library' > '{cache}/lib.txt'\n\
             \t@echo poison > '{cache}/poison'\n\
             \tcc -O2 -o prog prog.c\n"
        );
        let patch = f.patch(
            "poison.patch",
            &[],
            &[(
                "Makefile",
                "prog: prog.c\n\tcc -O2 -o prog prog.c\n",
                &makefile,
            )],
        );
        let mut confirm = f.evo();
        confirm
            .arg("confirm")
            .arg(&patch)
            .arg("--campaign")
            .arg(f.camp.join("campaign.json"));
        if copy {
            confirm.env(evo::measure::overlay::COPIES_ENV, "copy");
        }
        let out = confirm.output().unwrap();
        let (dir, result) = util::first_result(&f.camp).expect("a result");
        let build = result["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "build")
            .cloned()
            .unwrap();
        // The candidate's build had its own cache, and wrote only that.
        assert_eq!(build["status"], "passed", "{build}\n{}", text(&out));
        assert_eq!(
            std::fs::read_to_string(f.cache.join("lib.txt")).unwrap(),
            "the baseline's library\n"
        );
        assert!(!f.cache.join("poison").exists());
        // ... in the way the record says.
        let overlaid = overlays && !copy;
        let detail = result["sandbox"]["detail"].as_str().unwrap();
        let said = if overlaid {
            "through a copy-on-write overlay"
        } else {
            "got a private copy of the declared caches"
        };
        assert!(detail.contains(said), "{detail}");
        let log = |tree: &str| {
            let step = (result["steps"].as_array().unwrap().iter())
                .find(|s| s["step"] == "build" && s["tree"] == tree)
                .cloned()
                .unwrap();
            std::fs::read_to_string(dir.join(step["stderr_log"].as_str().unwrap())).unwrap()
        };
        assert_eq!(
            log("candidate").contains(" - overlay "),
            overlaid,
            "{}",
            log("candidate")
        );
    }
}

#[test]
fn a_candidate_build_copies_the_cache_the_baseline_build_left() {
    // The candidate's private copy of a writable cache is taken when its build starts. Built
    // beside the baseline, it was taken before the baseline's build filled a cold cache, so
    // both compiled every dependency; built after it, the copy holds what the baseline left.
    if !bubblewrap_works() {
        return;
    }
    let f = Fixture::new(&format!(r#", "sandbox": {{ "writable": ["{CACHE}"] }}"#));
    let cache = f.cache.display();
    write(
        &f.repo.join("Makefile"),
        &format!(
            "prog: prog.c\n\
             \t@if [ -e '{cache}/warm' ]; then echo 'cache warm' >&2; else echo 'cache cold' >&2; fi\n\
             \t@touch '{cache}/warm'\n\
             \tcc -O2 -o prog prog.c\n"
        ),
    );
    git(
        &f.repo,
        &[
            "commit",
            "-q",
            "-am",
            "a build that leaves a mark in its cache",
        ],
    );
    let patch = f.patch("note.patch", &[("NOTE.txt", "a note\n")], &[]);
    let out = f.confirm(&patch);
    let (dir, result) = util::first_result(&f.camp).expect("a result");
    let candidate_build = result["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "build" && s["tree"] == "candidate")
        .cloned()
        .unwrap_or_else(|| panic!("no candidate build step\n{}", text(&out)));
    let log =
        std::fs::read_to_string(dir.join(candidate_build["stderr_log"].as_str().unwrap())).unwrap();
    assert!(log.contains("cache warm"), "{log}\n{}", text(&out));
}

#[test]
fn a_writable_cache_too_large_to_copy_for_each_candidate_is_named_before_anything_builds() {
    // Where candidate builds copy each writable cache whole, a cache that grew large (evo's own
    // 3.8 GB target folder once declared there) silently cost a minute per candidate.
    if !bubblewrap_works() {
        return;
    }
    let f = Fixture::new(&format!(r#", "sandbox": {{ "writable": ["{CACHE}"] }}"#));
    // A refused patch: the warning comes before anything is built, nothing is copied.
    let patch = f.camp.join("dotdot.patch");
    write(
        &patch,
        "diff --git a/../outside.txt b/../outside.txt\nnew file mode 100644\n\
         --- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+outside\n",
    );
    let warned = |out: &Output| {
        String::from_utf8_lossy(&out.stderr).contains("every candidate build copies it")
    };
    // Copies, as where no overlay can be mounted (an overlay copies nothing: no warning then).
    let confirm = |copies: bool| {
        let mut c = f.evo();
        c.arg("confirm")
            .arg(&patch)
            .arg("--campaign")
            .arg(f.camp.join("campaign.json"));
        if copies {
            c.env(evo::measure::overlay::COPIES_ENV, "copy");
        }
        c.output().unwrap()
    };
    let out = confirm(true);
    assert!(!warned(&out), "a small cache is no warning\n{}", text(&out));
    // Blocks allocated, none written: the size of a real cache at no cost of writing one.
    let big = f.cache.join("big.bin");
    let made = std::process::Command::new("fallocate")
        .args(["-l", "2200M"])
        .arg(&big)
        .status()
        .unwrap();
    assert!(made.success());
    let out = confirm(true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(warned(&out), "{}", text(&out));
    assert!(stderr.contains("holds 2.1 GiB"), "{stderr}");
    assert!(
        text(&out).contains("has a `..` component"),
        "{}",
        text(&out)
    );
    let scratch = tempfile::tempdir().unwrap();
    if evo::measure::overlay::probe(scratch.path()).is_ok() {
        let out = confirm(false);
        assert!(!warned(&out), "overlays copy nothing\n{}", text(&out));
    }
    std::fs::remove_file(&big).unwrap();
}

#[test]
fn an_agent_sees_no_key_holdouts_or_campaign_and_none_of_evos_environment() {
    if !bubblewrap_works() {
        return;
    }
    let f = Fixture::new("");
    // The agent writes what its probe found into its tree, so it becomes its own patch.
    let agent_probe = f.probe().replace('\'', "'\\''");
    let command =
        format!("printf '%s' '{agent_probe}' > /tmp/probe.sh && sh /tmp/probe.sh > found.txt 2>&1");
    let campaign = std::fs::read_to_string(f.camp.join("campaign.json"))
        .unwrap()
        .replacen(
            r#""output": "receipts""#,
            &format!(
                r#""agent": {{ "command": {}, "timeout_s": 60 }}, "output": "receipts""#,
                serde_json::to_string(&command).unwrap()
            ),
            1,
        );
    write(&f.camp.join("campaign.json"), &campaign);
    let out = f
        .evo()
        .args(["campaign", "run"])
        .arg(f.camp.join("campaign.json"))
        .args(["--sandbox", "on"])
        .output()
        .unwrap();
    let written = f.everything_written();
    assert!(
        written.contains("PROBE-RAN"),
        "the agent's probe left nothing\n{}",
        text(&out)
    );
    let leaks = leaks(&written);
    assert!(leaks.is_empty(), "{leaks:#?}\n{}", text(&out));
    for line in f.key_lines() {
        assert!(!written.contains(&line), "a key line was written: {line}");
    }
}

#[test]
fn sandbox_on_refuses_to_start_where_the_sandbox_cannot_work() {
    let f = Fixture::new("");
    let empty = tempfile::tempdir().unwrap();
    let patch = f.prying_patch();
    let out = f
        .evo()
        .arg("confirm")
        .arg(patch)
        .arg("--campaign")
        .arg(f.camp.join("campaign.json"))
        .args(["--sandbox", "on"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the sandbox is required"),
        "{}",
        text(&out)
    );
    assert!(util::first_result(&f.camp).is_none(), "something ran");
}

#[test]
fn the_same_probe_unsandboxed_finds_the_secrets_so_it_can_fail() {
    let f = Fixture::new("");
    let out = f.confirm_with(&f.unsandboxed_probe_patch(), "off");
    let written = f.everything_written();
    let leaks = leaks(&written);
    for what in [
        "LEAKED:campaign-key",
        "LEAKED:holdouts",
        "LEAKED:write-outside",
    ] {
        assert!(
            leaks.iter().any(|l| l.contains(what)),
            "{what} not found: {leaks:#?}\n{}",
            text(&out)
        );
    }
    // The environment is an allow-list with or without the sandbox.
    assert!(!leaks.iter().any(|l| l.contains("LEAKED:environment")));
    let (_, result) = util::first_result(&f.camp).expect("a result");
    assert!(
        result["sandbox"]["detail"]
            .as_str()
            .unwrap()
            .contains("WARNING"),
        "{}",
        result["sandbox"]
    );
}

/// `id -u` of this process.
fn running_as_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn an_ordinary_user_gets_the_same_boundary() {
    // Run evo itself as `nobody` (uid 65534) on a fixture that user owns; possible where this
    // test runs as root and `setpriv` exists (as in CI), said and skipped elsewhere.
    if !running_as_root() || !Path::new("/usr/bin/setpriv").exists() || !bubblewrap_works() {
        eprintln!("skipped: needs root and setpriv to become an ordinary user");
        return;
    }
    let f = Fixture::new("");
    let patch = f.prying_patch();
    let home = f.camp.parent().unwrap().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let top = f.camp.parent().unwrap();
    // evo as `nobody` runs from a copy beside the fixture: the build's own folder may be one
    // that user cannot reach (CI keeps it in root's cache), and evo starts its helper from the
    // path it was run from.
    let evo = top.join("bin/evo");
    std::fs::create_dir_all(evo.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_evo"), &evo).unwrap();
    let chown = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(top)
        .status()
        .unwrap();
    assert!(chown.success());
    let mode = std::process::Command::new("chmod")
        .arg("755")
        .arg(top)
        .status()
        .unwrap();
    assert!(mode.success());
    // The copy stays root's, as the built binary was: `nobody` may run it, never rewrite it.
    let own = std::process::Command::new("chown")
        .args(["0:0"])
        .arg(&evo)
        .status()
        .unwrap();
    assert!(own.success());
    let before = snapshot(&f.repo);
    let out = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&evo)
        .arg("confirm")
        .arg(&patch)
        .arg("--campaign")
        .arg(f.camp.join("campaign.json"))
        .args(["--sandbox", "on"])
        .env("HOME", &home)
        .env("EVO_KEY_DIR", &f.key_dir)
        .env("EVO_TEST_TOKEN", TOKEN)
        .env("EVO_QUIET_WAIT_S", "0")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("EVO_STATE_DIR")
        .output()
        .unwrap();
    assert_eq!(before, snapshot(&f.repo), "{}", text(&out));
    let written = f.everything_written();
    assert!(written.contains("PROBE-RAN"), "{}", text(&out));
    let leaks = leaks(&written);
    assert!(leaks.is_empty(), "{leaks:#?}\n{}", text(&out));
    for line in f.key_lines() {
        assert!(!written.contains(&line), "a key line was written: {line}");
    }
    assert!(!f.outside.join("escaped").exists());
    assert_ne!(out.status.code(), Some(1), "{}", text(&out));
    assert_ne!(out.status.code(), Some(2), "{}", text(&out));
}
