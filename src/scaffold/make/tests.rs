use super::syntax::SubMake;
use super::*;

fn read(files: &[(&str, &str)]) -> MakeProject {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    MakeProject::read(dir.path(), "Makefile")
}

/// The layout of a C library whose top-level Makefile calls one Makefile per folder (lib/,
/// programs/, tests/), with shared settings in an included file.
const SPLIT: &[(&str, &str)] = &[
    ("Makefile.inc", "AR ?= ar\nCFLAGS ?= -O2\n"),
    (
        "Makefile",
        "include Makefile.inc\nLIBDIR = lib\nPRGDIR := programs\n\n.PHONY: default lib tool test\n\
         default: lib tool\n\nlib:\n\t$(MAKE) -C $(LIBDIR) all\n\ntool: lib\n\t$(MAKE) -C $(PRGDIR) $@\n\
         \tcp $(PRGDIR)/tool .\n\ntest:\n\t$(MAKE) -C tests $@\n",
    ),
    (
        "lib/Makefile",
        "include ../Makefile.inc\nall: libx.a\nlibx.a: x.o\n\t$(AR) rcs $@ $^\nx.o: x.c\n\t$(CC) -c -o $@ x.c\n",
    ),
    (
        "programs/Makefile",
        "LIB = ../lib\ntool: tool.c $(LIB)/libx.a\n\t$(CC) $(CFLAGS) -o $@ tool.c $(LIB)/libx.a\n\
         $(LIB)/libx.a:\n\t$(MAKE) -C $(LIB) libx.a\n",
    ),
    (
        "tests/Makefile",
        "test: datagen\n\t./datagen > out\ndatagen: datagen.c\n\t$(CC) -o $@ $<\n",
    ),
];

#[test]
fn sub_makefiles_are_followed_from_the_default_goal_to_what_they_link_and_archive() {
    let p = read(SPLIT);
    assert_eq!(p.artifacts.paths, ["lib/libx.a", "programs/tool"]);
    assert!(p.artifacts.unsure.is_empty(), "{:?}", p.artifacts.unsure);
    // The test programs are made by `make test`, not by the build.
    assert_eq!(p.test_target.as_deref(), Some("test"));
}

#[test]
fn a_one_file_makefile_gives_its_program_and_the_built_in_link_rule_counts() {
    let p = read(&[("Makefile", "prog: prog.c\n\tcc -O2 -o prog prog.c\n")]);
    assert_eq!(p.artifacts.paths, ["prog"]);
    assert_eq!(p.test_target, None);
    let p = read(&[(
        "Makefile",
        "all: app\napp: main.o util.o\nmain.o: main.c\nclean:\n\trm -f app *.o\ncheck: app\n\t./app --self-test\n",
    )]);
    assert_eq!(p.artifacts.paths, ["app"]);
    assert_eq!(p.test_target.as_deref(), Some("check"));
}

#[test]
fn a_name_evo_cannot_read_is_said_not_guessed() {
    let p = read(&[(
        "Makefile",
        "BIN := $(shell uname)-tool\nall: $(BIN)\n$(BIN): main.c\n\t$(CC) -o $@ main.c\n",
    )]);
    assert!(p.artifacts.paths.is_empty(), "{:?}", p.artifacts.paths);
    assert!(
        p.artifacts.unsure[0].contains("$(shell uname)-tool"),
        "{:?}",
        p.artifacts.unsure
    );
    let p = read(&[("Makefile", "all:\n\t./configure-and-build.sh\n")]);
    assert!(p.artifacts.paths.is_empty());
    assert!(p.artifacts.unsure[0].contains("no rule reached from the default goal"));
}

#[test]
fn a_test_rule_is_found_and_a_test_variable_is_not() {
    let rules = |text: &str| read(&[("Makefile", text)]).test_target;
    assert_eq!(
        rules("all: prog\n\ntest: prog\n\t./prog --selftest\n").as_deref(),
        Some("test")
    );
    assert_eq!(
        rules(".PHONY: test\nall:\ntest :: all\n").as_deref(),
        Some("test")
    );
    assert_eq!(rules("test := 1\nprog: prog.c\n"), None);
    assert_eq!(rules("tests: prog\n\ttest: x\nmytest: y\n"), None);
}

#[test]
fn sub_make_calls_are_read_in_their_usual_spellings() {
    let s = |line| sub_make(line);
    assert_eq!(
        s("$(MAKE) -C lib all"),
        Some(SubMake {
            dir: Some("lib".into()),
            targets: vec!["all".into()]
        })
    );
    assert_eq!(
        s("@cd programs && $(MAKE) tool CFLAGS=-O3"),
        Some(SubMake {
            dir: Some("programs".into()),
            targets: vec!["tool".into()]
        })
    );
    assert_eq!(
        s("+${MAKE} --directory=x"),
        Some(SubMake {
            dir: Some("x".into()),
            targets: vec![]
        })
    );
    assert_eq!(s("$(CC) -o prog prog.c"), None);
    assert_eq!(normalize("programs", "../lib"), Some("lib".into()));
    assert_eq!(normalize("", "../elsewhere"), None);
}

#[test]
fn a_compiler_called_by_its_absolute_path_is_found() {
    let p = read(&[(
        "Makefile",
        "CC = /usr/bin/gcc-12\nprog: prog.c\n\t$(CC) -o prog prog.c\n",
    )]);
    assert_eq!(p.absolute_compiler.as_deref(), Some("/usr/bin/gcc-12"));
    let p = read(&[(
        "Makefile",
        "prog: prog.c\n\t@/opt/cc/bin/clang -o prog prog.c\n",
    )]);
    assert_eq!(p.absolute_compiler.as_deref(), Some("/opt/cc/bin/clang"));
    assert_eq!(read(SPLIT).absolute_compiler, None);
    let p = read(&[(
        "Makefile",
        "prog: prog.c\n\t/bin/cp a b\n\t$(CC) -o prog prog.c\n",
    )]);
    assert_eq!(p.absolute_compiler, None);
}

#[test]
fn a_conditional_make_can_decide_is_decided_and_one_it_cannot_reads_both_branches() {
    let p = read(&[(
        "Makefile",
        "ifneq (,$(filter Windows%,$(OS)))\nWIN = yes\nelse\nWIN = no\nendif\n\
         ifeq ($(WIN),yes)\nEXT = .exe\nelse ifeq ($(WIN),no)\nEXT =\nendif\n\
         ifdef NEVER_SET\nEXT = .never\nendif\n\
         all: tool$(EXT)\ntool$(EXT): tool.c\n\t$(CC) -o $@ tool.c\n",
    )]);
    assert_eq!(p.artifacts.paths, ["tool"], "{:?}", p.artifacts.unsure);
    let p = read(&[(
        "Makefile",
        "MODE = fast\nifeq \"$(MODE)\" \"slow\"\nall: slow\nslow: s.c\n\t$(CC) -o slow s.c\nelse\n\
         all: fast\nfast: f.c\n\t$(CC) -o fast f.c\nendif\n",
    )]);
    assert_eq!(p.artifacts.paths, ["fast"]);
}
