//! `evo keygen`: a new signing key pair, written where evo will look for it (docs/design.md
//! §5.9).

use crate::cli::KeygenArgs;
use crate::exit_codes;
use crate::failure::Failure;
use crate::path::shown;

pub(super) fn keygen_command(args: KeygenArgs) -> Result<i32, Failure> {
    use crate::receipt::keys;
    let (dir, origin) = match args.out {
        Some(dir) => (dir, "--out"),
        None => (
            keys::default_dir().map_err(Failure::usage)?,
            keys::default_dir_origin(),
        ),
    };
    // A key made in a clone could be committed, and evo would refuse it later anyway.
    keys::check_place(&dir, origin, &[]).map_err(Failure::usage)?;
    match keys::write_new_pair(&dir) {
        Ok((key, files)) => {
            println!(
                "private key: {} (mode 0600; keep it secret)",
                shown(&files.private)
            );
            println!(
                "public key:  {} (SPKI PEM; give it to whoever verifies receipts)",
                shown(&files.public)
            );
            println!("key id:      {}", keys::key_id(&key.verifying_key()));
            Ok(exit_codes::ACCEPTED)
        }
        Err(e @ keys::KeyError::Exists(_)) => Err(Failure::usage(e)),
        Err(e) => Err(anyhow::Error::new(e).into()),
    }
}
