//! Unit tests of `build_flags`: what it proposes from a build file and a history.

use super::*;
use crate::evidence::summary::Source;
use crate::search::BRIEF_VERSION;

fn brief(run: usize, history: Vec<HistoryEntry>) -> Brief {
    Brief {
        brief_version: BRIEF_VERSION,
        objective: String::new(),
        bottleneck: String::new(),
        constraints: Vec::new(),
        workload: "w".into(),
        build: "make -s".into(),
        build_cwd: "sub".into(),
        test: Vec::new(),
        scenarios: Vec::new(),
        protected: Vec::new(),
        config_files: Vec::new(),
        search_seed: 1,
        explanation_file: "EVO_EXPLANATION.md".into(),
        cost_file: "EVO_COST.json".into(),
        round: 2,
        rounds: 2,
        run,
        runs_per_round: 2,
        parent: None,
        history,
        profile: None,
        profile_unavailable: None,
    }
}

fn tried(name: &str, line: &str, status: Status, median: Option<f64>) -> HistoryEntry {
    HistoryEntry {
        index: 1,
        name: name.into(),
        source: Source::Agent,
        round: 1,
        parent: None,
        status,
        reason: String::new(),
        screening_median: median,
        screening_pairs: 3,
        explanation: None,
        patch: format!("--- a/sub/Makefile\n+++ b/sub/Makefile\n-CFLAGS ?= -O2\n+{line}\n"),
        patch_truncated: false,
    }
}

const MAKEFILE: &str =
    "CC ?= cc\nCFLAGS ?= -O2\nCFLAGS += -std=c11\nprog: p.c\n\t$(CC) $(CFLAGS) -o prog p.c\n";

fn tree(makefile: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/Makefile"), makefile).unwrap();
    dir
}

fn cflags(dir: &tempfile::TempDir) -> String {
    let text = std::fs::read_to_string(dir.path().join("sub/Makefile")).unwrap();
    text.lines().nth(1).unwrap().to_string()
}

#[test]
fn the_first_round_proposes_one_step_per_run_in_order() {
    for (run, want) in [
        (1, "CFLAGS ?= -O3"),
        (2, "CFLAGS ?= -O2 -march=native"),
        (3, "CFLAGS ?= -O2 -flto"),
    ] {
        let dir = tree(MAKEFILE);
        let p = propose(&brief(run, Vec::new()), dir.path()).unwrap();
        assert!(matches!(p, Proposal::Changed { .. }), "{p:?}");
        assert_eq!(cflags(&dir), want);
        // Only the flags line changed.
        let text = std::fs::read_to_string(dir.path().join("sub/Makefile")).unwrap();
        assert!(text.ends_with("\t$(CC) $(CFLAGS) -o prog p.c\n"), "{text}");
    }
}

#[test]
fn later_rounds_build_on_what_gained_and_skip_what_was_tried_failed_or_lost() {
    let history = vec![
        tried("a", "CFLAGS ?= -O3", Status::Screened, Some(1.30)),
        tried(
            "b",
            "CFLAGS ?= -O2 -march=native",
            Status::Screened,
            Some(0.95),
        ),
        tried("c", "CFLAGS ?= -O2 -flto", Status::BuildFailed, None),
    ];
    let dir = tree(MAKEFILE);
    let p = propose(&brief(1, history.clone()), dir.path()).unwrap();
    // -march=native lost time and -flto failed: on top of -O3, unrolling is what is left.
    assert_eq!(cflags(&dir), "CFLAGS ?= -O3 -funroll-loops", "{p:?}");
    let Proposal::Changed { explanation, .. } = p else {
        panic!()
    };
    assert!(explanation.contains("1.300×"), "{explanation}");
    // Without the history it would have proposed -O3 again.
    let dir = tree(MAKEFILE);
    propose(&brief(1, Vec::new()), dir.path()).unwrap();
    assert_eq!(cflags(&dir), "CFLAGS ?= -O3");
    // Once that is tried too, nothing is left: no change rather than a repeat.
    let mut all = history;
    all.push(tried(
        "d",
        "CFLAGS ?= -O3 -funroll-loops",
        Status::Screened,
        Some(1.31),
    ));
    let dir = tree(MAKEFILE);
    let p = propose(&brief(1, all), dir.path()).unwrap();
    assert!(matches!(p, Proposal::Nothing(_)), "{p:?}");
    assert_eq!(cflags(&dir), "CFLAGS ?= -O2");
}

#[test]
fn a_tree_that_already_holds_its_parent_adds_the_next_step_to_it() {
    let dir = tree(&MAKEFILE.replace("-O2", "-O3"));
    let mut b = brief(
        1,
        vec![tried("a", "CFLAGS ?= -O3", Status::Screened, Some(1.3))],
    );
    b.parent = Some(crate::search::Parent {
        index: 1,
        name: "a".into(),
        screening_median: Some(1.3),
    });
    propose(&b, dir.path()).unwrap();
    assert_eq!(cflags(&dir), "CFLAGS ?= -O3 -march=native");
}

#[test]
fn a_compiler_command_without_cflags_gets_its_level_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    std::fs::write(
        dir.path().join("sub/build.sh"),
        "#!/bin/sh\ncc -O2 -o p p.c -lm\n",
    )
    .unwrap();
    propose(&brief(2, Vec::new()), dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join("sub/build.sh")).unwrap();
    assert_eq!(text, "#!/bin/sh\ncc -O2 -march=native -o p p.c -lm\n");
}

#[test]
fn a_cargo_build_gets_its_profile_set() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    let manifest = "[package]\nname = \"x\"\n\n[profile.release]\ndebug = true\n";
    std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
    let mut b = brief(1, Vec::new());
    b.build = "cargo build --release".into();
    propose(&b, dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join("Cargo.toml")).unwrap();
    assert!(
        text.contains("[profile.release]\nopt-level = 3\ndebug = true\n"),
        "{text}"
    );
    // opt-level is there now: the third step still open is the CPU.
    b.run = 3;
    propose(&b, dir.path()).unwrap();
    let config = std::fs::read_to_string(dir.path().join(".cargo/config.toml")).unwrap();
    assert!(config.contains("target-cpu=native"), "{config}");
}

#[test]
fn a_build_without_flags_is_left_alone() {
    let dir = tree("all:\n\ttrue\n");
    let p = propose(&brief(1, Vec::new()), dir.path()).unwrap();
    assert!(matches!(p, Proposal::Nothing(_)), "{p:?}");
}

#[test]
fn steps_that_are_neutral_alone_are_combined_next() {
    // Neither -O3 nor -march=native gains alone (within screening's noise): the next round tries
    // them together, the vectorizer's case.
    let history = vec![
        tried("a", "CFLAGS ?= -O3", Status::Screened, Some(0.99)),
        tried(
            "b",
            "CFLAGS ?= -O2 -march=native",
            Status::Screened,
            Some(0.985),
        ),
    ];
    let dir = tree(MAKEFILE);
    propose(&brief(1, history.clone()), dir.path()).unwrap();
    assert_eq!(cflags(&dir), "CFLAGS ?= -O3 -march=native");
    let dir = tree(MAKEFILE);
    propose(&brief(2, history), dir.path()).unwrap();
    assert_eq!(cflags(&dir), "CFLAGS ?= -O3 -flto");
}

fn with_training(mut b: Brief) -> Brief {
    b.scenarios = vec![crate::search::BriefScenario {
        name: "train".into(),
        run: "./prog --seed {seed} --n $N".into(),
        check: "./prog check".into(),
        cwd: "sub".into(),
    }];
    b
}

#[test]
fn a_profile_guided_build_compiles_twice_around_a_training_run_on_another_seed() {
    let b = with_training(brief(1, Vec::new()));
    let plan = pgo::plan(&b, MAKEFILE, false, &|_| true).expect("a plan");
    let lines: Vec<String> = MAKEFILE.lines().map(str::to_string).collect();
    let written = plan.write(lines).join("\n");
    assert_eq!(
        written,
        "CC ?= cc\nCFLAGS ?= -O2\nCFLAGS += -std=c11\nprog: p.c\n\trm -f *.gcda\n\
         \t$(CC) $(CFLAGS) -fprofile-generate -o prog p.c\n\
         \t./prog --seed 2 --n $$N > /dev/null\n\
         \t$(CC) $(CFLAGS) -fprofile-use -fprofile-correction -o prog p.c"
    );
    // Read back, the file holds the step (the history's patches are read the same way).
    assert!(
        steps_in_patch(&format!("+{}", written.lines().nth(7).unwrap()), &C_STEPS)
            .contains(&Step::Pgo)
    );
    // A script runs the training command as it is written.
    let script = "#!/bin/sh\ncc -O2 -o prog p.c -lm\n";
    let plan = pgo::plan(&b, script, true, &|_| true).expect("a plan");
    let written = plan.write(script.lines().map(str::to_string).collect());
    assert_eq!(written[3], "./prog --seed 2 --n $N > /dev/null");
    assert_eq!(
        written[4],
        "cc -O2 -fprofile-use -fprofile-correction -o prog p.c -lm"
    );
}

#[test]
fn no_profile_guided_build_where_it_cannot_be_written_safely() {
    let b = with_training(brief(1, Vec::new()));
    // Not GCC (clang needs its profiles merged first).
    assert_eq!(pgo::plan(&b, MAKEFILE, false, &|_| false), None);
    // Objects compiled apart and linked later.
    let objects = "CFLAGS ?= -O2\nprog: p.o\n\t$(CC) $(CFLAGS) -o prog p.o\np.o: p.c\n\t$(CC) $(CFLAGS) -c -o p.o p.c\n";
    assert_eq!(pgo::plan(&b, objects, false, &|_| true), None);
    // No training scenario, or one that runs in another folder than the binary's.
    assert_eq!(
        pgo::plan(&brief(1, Vec::new()), MAKEFILE, false, &|_| true),
        None
    );
    let mut elsewhere = b.clone();
    elsewhere.scenarios[0].cwd = "other".into();
    assert_eq!(pgo::plan(&elsewhere, MAKEFILE, false, &|_| true), None);
    // Without a plan the step is not among those the agent may take.
    let target = Target::CFlags {
        file: PathBuf::from("Makefile"),
        line: 1,
        pgo: None,
    };
    assert!(!target.steps().contains(&Step::Pgo));
}

#[test]
fn a_script_keeps_its_three_compile_commands_in_step() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    let script = "#!/bin/sh\nrm -f *.gcda\ncc -O2 -fprofile-generate -o p p.c -lm\n./p > /dev/null\n\
                  cc -O2 -fprofile-use -fprofile-correction -o p p.c -lm\n";
    std::fs::write(dir.path().join("sub/build.sh"), script).unwrap();
    // Profile-guided already: the next step goes to every compile command, or the profile
    // recorded by one build would be used on code another built.
    propose(&brief(1, Vec::new()), dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join("sub/build.sh")).unwrap();
    assert_eq!(
        text,
        "#!/bin/sh\nrm -f *.gcda\ncc -O3 -fprofile-generate -o p p.c -lm\n./p > /dev/null\n\
         cc -O3 -fprofile-use -fprofile-correction -o p p.c -lm\n"
    );
}
