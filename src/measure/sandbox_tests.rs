//! Tests of the sandbox: the `bwrap` arguments that drop privileges and order the mounts, what
//! `off` decides, and the environment's allow-list.

use super::*;

fn strings(args: Vec<OsString>) -> Vec<String> {
    args.into_iter().map(|a| a.into_string().unwrap()).collect()
}

#[test]
fn a_sandbox_drops_privileges_and_binds_the_tree_after_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let keys = cache.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let view = View {
        home: Some("/home/u".into()),
        shown: vec![Shown::Folder("/usr".into())],
        covered: vec![Covered::File("/etc/shadow".into())],
        secrets: vec![keys.clone()],
    };
    let sandbox = Sandbox {
        bwrap: "bwrap".into(),
        view: Arc::new(view),
        binds: vec![
            Bind {
                source: "/w/copy".into(),
                dest: cache.clone(),
                writable: true,
            },
            Bind::same(Path::new("/w/work/candidate"), true),
        ],
        cwd: Some("/w/work/candidate/src".into()),
        network: false,
        limits: SandboxLimits {
            tmp_mib: std::num::NonZeroU32::new(3).unwrap(),
            ..SandboxLimits::default()
        },
        overlays: Vec::new(),
    };
    let args = strings(sandbox.argv(Path::new("/opt/evo")));
    let at = |flag: &str| args.iter().position(|a| a == flag).unwrap();
    for flag in [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--disable-userns",
        "--new-session",
        "--as-pid-1",
    ] {
        assert!(args.contains(&flag.to_string()), "{flag} missing: {args:?}");
    }
    assert_eq!(args[at("--cap-drop") + 1], "ALL");
    assert_eq!(args[at("--uid") + 1], SANDBOX_ID);
    assert!(
        !args.contains(&"/".to_string()),
        "the root is never shown: {args:?}"
    );
    let home = args.iter().position(|a| a == "/home/u").unwrap();
    let usr = args.iter().position(|a| a == "/usr").unwrap();
    assert!(home < usr, "{args:?}");
    let at_cache = args.iter().position(|a| a == cache.to_str().unwrap());
    let at_key = args.iter().position(|a| a == keys.to_str().unwrap());
    assert!(
        at_cache.unwrap() < at_key.unwrap(),
        "a secret inside a bind is covered after it: {args:?}"
    );
    assert_eq!(args[at("--chdir") + 1], "/w/work/candidate/src");
    assert_eq!(args[at("--size") + 1], (3u64 << 20).to_string());
    assert_eq!(args[at("--size") + 2], "--tmpfs");
    assert_eq!(args[at("--size") + 3], "/tmp");
    let tail = &args[args.len() - 4..];
    let rlimits = init::RLimits::of(&sandbox.limits).arg();
    assert_eq!(tail, ["--", INIT_PATH, INIT_ARG, &rlimits]);
}

#[test]
fn an_agent_keeps_the_network_and_nothing_else_changes() {
    let sandbox = Sandbox {
        bwrap: "bwrap".into(),
        view: Arc::new(View::default()),
        binds: vec![],
        cwd: None,
        network: true,
        limits: SandboxLimits::default(),
        overlays: Vec::new(),
    };
    let args = strings(sandbox.argv(Path::new("/opt/evo")));
    assert!(!args.contains(&"--unshare-net".to_string()));
    assert!(args.contains(&"--unshare-pid".to_string()));
}

#[test]
fn off_mode_never_probes_and_says_why() {
    let request = SandboxRequest {
        mode: SandboxMode::Off,
        ..SandboxRequest::default()
    };
    let policy = SandboxPolicy::for_request(request).unwrap();
    assert!(!policy.enabled());
    assert!(policy.record.detail.contains("WARNING"));
    let t = Path::new("/t");
    assert!(matches!(
        policy.for_build(t, None, Arm::Candidate),
        Ok(None)
    ));
    assert_eq!(policy.for_run(t, None), None);
    assert_eq!(policy.for_agent(t, None), None);
}

#[test]
fn the_signing_key_variable_is_never_passed_even_when_asked_for() {
    let pass = ["EVO_SIGNING_KEY".to_string(), "API_TOKEN".to_string()];
    let every_variable_is_set = |_: &str| Some("value".to_string());
    for sandboxed in [true, false] {
        let env = environment_from(sandboxed, &pass, &every_variable_is_set);
        assert!(!env.contains_key("EVO_SIGNING_KEY"), "{env:?}");
        assert!(env.contains_key("API_TOKEN"), "{env:?}");
        assert!(env.contains_key("PATH"), "{env:?}");
    }
}

#[test]
fn the_environment_is_an_allow_list() {
    let env = run_environment(true, &["EVO_TEST_PASSED_NOWHERE".to_string()]);
    assert_eq!(env.get("TMPDIR").map(String::as_str), Some("/tmp"));
    for name in env.keys() {
        assert!(
            PASSED_ENV.contains(&name.as_str()) || name == "TMPDIR",
            "{name} is not on the allow-list"
        );
    }
}
