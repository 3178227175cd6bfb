//! `evo receipt verify` and the receipt check `evo pr render` shares: which trusted key checks
//! the receipt (and saying which entry of the list matched), the recomputation, and what the
//! reviewer requires of a valid receipt (`--require`, `--patch`, `--diff`), each with its own
//! exit code: invalid (5), valid but not what was required (6), valid (0).

use std::path::{Path, PathBuf};

use crate::cli::VerifyArgs;
use crate::exit_codes;
use crate::failure::{Doing, Failure};
use crate::path::shown;
use crate::receipt::binding::{self, BindingError};
use crate::receipt::keys::{self, KeyError};
use crate::receipt::trusted::{self, Trusted, TrustedKey};

/// A verified receipt and the trusted-key entry that checked it.
pub(super) struct Opened {
    pub verified: crate::receipt::Verified,
    pub entry: String,
}

fn key_failure(e: KeyError) -> Failure {
    let hint = match e {
        KeyError::InWorkTree { .. } => {
            "copy the signer's public key to a folder outside any repository (such as \
             ~/.config/evo) and pass it with --key FILE"
        }
        _ => "pass the signer's public key with --key FILE",
    };
    Failure::usage(e).hint(hint)
}

/// Reads a receipt and checks it against the trusted key with the id it names: one of `keys`
/// when given, else one of the default list ([`trusted::defaults`]).
pub(super) fn open_receipt(file: &Path, keys: &[PathBuf]) -> Result<Opened, Failure> {
    // The receipt first: a wrong path is the likelier mistake, and says nothing about keys.
    let bytes = std::fs::read(file).map_err(|e| {
        // The path as the user typed it: tidying a path evo did not write could name another file.
        Failure::usage(Doing::new(
            format!("cannot read the receipt {}", file.display()),
            e,
        ))
    })?;
    let trusted = match keys {
        [] => trusted::defaults(),
        named => trusted::from_flags(named),
    }
    .map_err(key_failure)?;
    for skipped in &trusted.skipped {
        eprintln!("evo: {skipped}");
    }
    let found = pick_key(
        &trusted,
        &crate::receipt::dsse::named_key_ids(&bytes),
        !keys.is_empty(),
    )
    .map_err(|e| Failure::usage(e).hint("pass the signer's public key with --key FILE"))?;
    eprintln!(
        "evo: checking with key {} ({})",
        keys::key_id(&found.key),
        found.entry
    );
    let verified = crate::receipt::verify(&bytes, &found.key).map_err(|e| {
        let failure =
            Failure::verification(Doing::new(format!("{} does not verify", file.display()), e));
        if keys.is_empty() {
            failure.hint("if another key signed it, pass its public key with --key FILE")
        } else {
            failure
        }
    })?;
    Ok(Opened {
        verified,
        entry: found.entry,
    })
}

/// No trusted key has the id a receipt names: which ids it names and where evo looked.
#[derive(Debug, thiserror::Error)]
#[error(
    "no trusted key matches: the receipt names {ids}; evo looked for {} (else {}) in {}",
    keys::PUBLIC_KEY_FILE,
    keys::PRIVATE_KEY_FILE,
    looked.join(", ")
)]
struct NoTrustedKey {
    /// "key id X, Y", or that it names none.
    ids: String,
    looked: Vec<String>,
}

/// The trusted key with an id in `wanted`; else, after saying where evo looked, the first one,
/// so that the check explains the difference (another key, or an altered key id). Keys the
/// user `named` are checked against without that notice.
fn pick_key(trusted: &Trusted, wanted: &[String], named: bool) -> Result<TrustedKey, NoTrustedKey> {
    if let Some(found) = trusted.matching(wanted) {
        return Ok(found.clone());
    }
    let ids = match wanted {
        [] => "no key id (it is not a signed receipt)".to_string(),
        ids => format!("key id {}", ids.join(", ")),
    };
    let none = NoTrustedKey {
        ids,
        looked: trusted.looked.clone(),
    };
    match trusted.keys.first() {
        Some(found) => {
            if !named {
                eprintln!("evo: {none}");
            }
            Ok(found.clone())
        }
        None => Err(none),
    }
}

pub(super) fn verify_command(args: VerifyArgs) -> Result<i32, Failure> {
    let opened = open_receipt(&args.file, &args.key)?;
    let verified = &opened.verified;
    let p = &verified.statement.predicate;
    println!(
        "{}: signature valid, key {} (trusted: {}), sha256 {}",
        args.file.display(),
        verified.key_id,
        opened.entry,
        verified.sha256
    );
    for s in &verified.statement.subject {
        let digests: Vec<String> = s.digest.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        println!("  subject {} {}", s.name, digests.join(" "));
    }
    let standing = crate::report::wording::standing(p.verdict, p.tier);
    println!("  run {}: verdict {standing}", p.evidence.run_id);
    match (&args.unseal, args.recompute) {
        (Some(dir), true) => {
            let result =
                crate::confirm::outcome::matching_result(dir, p).map_err(Failure::verification)?;
            println!(
                "  {}: its result.json, sealed with its own key, is the signed receipt",
                shown(dir)
            );
            recompute(&result)?;
        }
        (None, true) => recompute(p)?,
        _ => {}
    }
    let mut unmet = bound_to(&args, p)?;
    unmet.extend(binding::unmet(p, &args.require));
    // The tier only beside an acceptance: "verdict inconclusive, tier rejected" read as a
    // contradiction.
    let said = format!("valid signature, verdict {standing}");
    if !unmet.is_empty() {
        let mut failure = Failure::new(
            exit_codes::REQUIREMENT_NOT_MET,
            anyhow::anyhow!("{said}, but not what was required:"),
        );
        failure.hints = unmet;
        return Err(failure);
    }
    println!("{said}");
    let nothing_asked = args.require.is_empty() && args.patch.is_none() && args.diff.is_none();
    if nothing_asked {
        eprintln!(
            "evo: exit 0 says only that the signature is valid, not which verdict or patch it \
             is about: add --require accepted and --patch FILE or --diff BASE..HEAD to check \
             those"
        );
    }
    Ok(exit_codes::ACCEPTED)
}

/// Whether the receipt is about the patch (`--patch`) and the range (`--diff`) under review:
/// each mismatch as a sentence. A range or repository that cannot be read is a usage error.
fn bound_to(
    args: &VerifyArgs,
    p: &crate::evidence::result::ConfirmResult,
) -> Result<Vec<String>, Failure> {
    let mut unmet = Vec::new();
    // The copy of the patch the run directory keeps beside its receipt (`candidate.patch`).
    let name = Path::new(&p.evidence.patch.file)
        .file_name()
        .map(PathBuf::from);
    let beside = (args.file.parent().zip(name)).map(|(dir, name)| dir.join(name));
    let patch_file = match (&args.patch, &args.diff) {
        (Some(file), _) => Some(file.clone()),
        (None, Some(_)) => beside,
        (None, None) => None,
    };
    let Some(patch_file) = patch_file else {
        return Ok(unmet);
    };
    let bytes = read_patch(&patch_file, args.patch.is_none())?;
    if let Err(e) = binding::check_patch(p, &bytes, &shown(&patch_file)) {
        unmet.push(e.to_string());
        return Ok(unmet);
    }
    println!("  patch {} is the receipt's patch", shown(&patch_file));
    let Some(range) = &args.diff else {
        return Ok(unmet);
    };
    let repo = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let resolved = binding::resolve_range(&repo, range).map_err(Failure::usage)?;
    match binding::check_range(p, &repo, &resolved, &bytes) {
        Ok(()) => println!(
            "  baseline {} is {range}'s base, and the patch makes exactly the change {}..{}",
            resolved.base, resolved.from, resolved.to
        ),
        Err(BindingError::Git(e)) => return Err(Failure::usage(e)),
        Err(e) => unmet.push(e.to_string()),
    }
    Ok(unmet)
}

fn read_patch(file: &Path, found_beside: bool) -> Result<Vec<u8>, Failure> {
    use crate::tree::{PatchFile, too_large_message};
    match crate::tree::read_patch(file) {
        Ok(PatchFile::Bytes(bytes)) => Ok(bytes),
        Ok(PatchFile::TooLarge(size)) => Err(Failure::usage(too_large_message(file, size))),
        Err(e) => {
            let failure = Failure::usage(Doing::new(
                format!("cannot read the patch {}", shown(file)),
                e,
            ));
            Err(match found_beside {
                true => failure.hint(
                    "--diff compares the receipt's own patch with the range: pass it with \
                     --patch FILE (the candidate.patch of the receipt's run directory)",
                ),
                false => failure,
            })
        }
    }
}

/// `--recompute`: every figure must follow from the raw runs, under this evo's rules.
fn recompute(p: &crate::evidence::result::ConfirmResult) -> Result<(), Failure> {
    // Another evo's rules would report every rule change as a difference: refuse instead.
    if let Err(e) = crate::receipt::recompute::same_rules(p) {
        return Err(Failure::verification(e).hint(format!(
            "recompute it with the evo that made it (evo {}), or with an evo whose rules are {}",
            p.evidence.evo_version, e.recorded
        )));
    }
    let differences = crate::receipt::recompute::recompute(p);
    if differences.is_empty() {
        let runs: usize = p
            .evidence
            .scenarios
            .iter()
            .map(|s| s.warmups.len() + 2 * (s.aa_pairs.len() + s.pairs.len()))
            .sum();
        let sealed = |d: &&crate::evidence::result::DrawnInputs| {
            (d.commands.iter()).any(|c| crate::receipt::seal::is_sealed(&c.template))
        };
        let draws = p.evidence.draws.iter().filter(|d| !sealed(d)).count();
        let drawn = match (draws, p.evidence.draws.len() - draws) {
            (0, 0) => String::new(),
            (n, 0) => format!("; the {n} drawn input(s) from their seeds"),
            (n, held) => format!(
                "; the {n} drawn input(s) from their seeds ({held} of sealed holdouts: \
                 --unseal RUN_DIR re-derives those)"
            ),
        };
        println!(
            "recomputed: every figure, gate, tier and the verdict follow from the {runs} raw \
             runs{drawn}"
        );
        return Ok(());
    }
    let mut failure = Failure::verification(format!(
        "{} figure(s) do not follow from the raw runs in the receipt:",
        differences.len()
    ));
    failure.hints = differences.iter().map(|d| d.to_string()).collect();
    Err(failure)
}
