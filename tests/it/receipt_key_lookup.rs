//! Which key `evo receipt verify` and `evo pr render` use when none is named: the receipt is read
//! first, then the key directories evo knows are searched for the key id the receipt names.

use crate::util::synthetic;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use evo::exit_codes::{ACCEPTED, USAGE_ERROR, VERIFICATION_FAILED};
use evo::receipt::{self, keys};

/// `evo` with no `$EVO_KEY_DIR`, so it looks in `$XDG_CONFIG_HOME/evo` and `$HOME/.config/evo`.
fn evo_at(home: &Path, xdg: &Path, args: &[&str], receipt: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_evo"))
        .env_remove(keys::KEY_DIR_ENV)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", xdg)
        .args(args)
        .arg(receipt)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

struct Homes {
    dir: tempfile::TempDir,
}

impl Homes {
    fn new() -> Homes {
        Homes {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn xdg(&self) -> PathBuf {
        self.dir.path().join("xdg")
    }
    fn home_keys(&self) -> PathBuf {
        self.home().join(".config").join("evo")
    }
    fn xdg_keys(&self) -> PathBuf {
        self.xdg().join("evo")
    }
    /// A receipt signed by a fresh key pair in `dir`; returns its path and the key id.
    fn receipt_signed_in(&self, dir: &Path) -> (PathBuf, String) {
        let (key, _) = keys::write_new_pair(dir).unwrap();
        let result = synthetic::hostile_result("plain text", false);
        let file = self.dir.path().join(receipt::RECEIPT_FILE);
        std::fs::write(&file, receipt::sign(&result, &key).unwrap().bytes).unwrap();
        (file, keys::key_id(&key.verifying_key()))
    }
    fn run(&self, args: &[&str], receipt: &Path) -> Output {
        evo_at(&self.home(), &self.xdg(), args, receipt)
    }
}

#[test]
fn a_missing_receipt_is_named_before_anything_about_keys() {
    let h = Homes::new();
    let missing = h.dir.path().join("nope").join(receipt::RECEIPT_FILE);
    for args in [&["receipt", "verify"][..], &["pr", "render"][..]] {
        let out = h.run(args, &missing);
        assert_eq!(out.status.code(), Some(USAGE_ERROR), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("cannot read the receipt {}", missing.display())),
            "{err}"
        );
        assert!(!err.contains("key"), "{err}");
    }
}

#[test]
fn the_key_whose_id_the_receipt_names_is_found_in_any_key_directory_and_named() {
    let h = Homes::new();
    // The XDG directory, searched first, holds another key; the signer's is in ~/.config/evo.
    keys::write_new_pair(&h.xdg_keys()).unwrap();
    let (receipt, id) = h.receipt_signed_in(&h.home_keys());
    for args in [&["receipt", "verify"][..], &["pr", "render"][..]] {
        let out = h.run(args, &receipt);
        assert_eq!(out.status.code(), Some(ACCEPTED), "{}", stderr(&out));
        let used = h.home_keys().join(keys::PUBLIC_KEY_FILE);
        assert!(
            stderr(&out).contains(&format!("checking with key {id} ({})", used.display())),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn without_a_matching_key_evo_says_where_it_looked_and_which_id_it_wanted() {
    let h = Homes::new();
    let elsewhere = h.dir.path().join("elsewhere");
    let (receipt, id) = h.receipt_signed_in(&elsewhere);
    // No key at all: a usage error that names the places and the id.
    let out = h.run(&["receipt", "verify"], &receipt);
    assert_eq!(out.status.code(), Some(USAGE_ERROR), "{}", stderr(&out));
    let err = stderr(&out);
    for what in [
        id.clone(),
        h.xdg_keys().display().to_string(),
        h.home_keys().display().to_string(),
        "--key".to_string(),
    ] {
        assert!(err.contains(&what), "{what} missing\n{err}");
    }
    // Another key in a known place: checked against it, so the reason is the specific one.
    keys::write_new_pair(&h.home_keys()).unwrap();
    let out = h.run(&["receipt", "verify"], &receipt);
    assert_eq!(
        out.status.code(),
        Some(VERIFICATION_FAILED),
        "{}",
        stderr(&out)
    );
    let err = stderr(&out);
    assert!(
        err.contains(&format!("the receipt names key id {id}")),
        "{err}"
    );
    assert!(err.contains("wrong key"), "{err}");
    assert!(err.contains(&h.home_keys().display().to_string()), "{err}");
}
