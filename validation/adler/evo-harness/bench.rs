//! evo's timed harness for the `adler` crate's Adler-32 checksum (validation/adler,
//! docs/validation.md).
//!
//! Not part of adler: the workload copies it into every tree as an overlay and compiles it with
//! rustc against the tree's crate, built as an rlib from src/lib.rs. A run
//!
//!   1. fills a buffer of --kib KiB from --seed (random bytes, runs and text-like stretches);
//!   2. for each of --passes passes, stamps 64 pass-dependent words into it, cuts it into pieces
//!      whose lengths are drawn from the seed and the pass (mostly 1-64 KiB, some under 64
//!      bytes, at any alignment), checksums every piece with `Adler32::write_slice` (some in two
//!      calls, to resume a running sum) and folds every checksum into the digest;
//!   3. checks the first and last pass's pieces against a plain byte-at-a-time Adler-32 written
//!      here (exit 2 on a difference) and prints the seed, the sizes and two 64-bit digests.
//!
//!   evo-bench run --seed N [--kib K] [--passes P] [--short S]
//!   evo-bench selftest
use adler::{adler32_reader, adler32_slice, Adler32};
use std::process::exit;

fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn pick(s: &mut u64, n: u64) -> u64 {
    splitmix(s) % n
}

/// The definition, one byte at a time, as the reference.
fn plain_adler(data: &[u8], start: u32) -> u32 {
    let (mut a, mut b) = (start & 0xFFFF, start >> 16);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

fn fill(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed ^ 0x0123_4567_89AB_CDEF;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        match pick(&mut s, 8) {
            0 => {
                let n = 1 + pick(&mut s, 300) as usize;
                let b = splitmix(&mut s) as u8;
                v.extend(std::iter::repeat(b).take(n));
            }
            1 | 2 => {
                let n = 16 + pick(&mut s, 200) as usize;
                for _ in 0..n {
                    v.push(b"etaoin shrdlu,."[pick(&mut s, 15) as usize]);
                }
            }
            _ => {
                for _ in 0..32 {
                    v.extend_from_slice(&splitmix(&mut s).to_le_bytes());
                }
            }
        }
    }
    v.truncate(len);
    v
}

fn stamp(buf: &mut [u8], seed: u64, pass: u64) {
    let mut s = seed ^ pass.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 0xA5A5_A5A5;
    let part = buf.len() / 64;
    if part < 16 {
        return;
    }
    for k in 0..64 {
        let w = splitmix(&mut s);
        let at = part * k + (w % (part as u64 - 8)) as usize;
        buf[at..at + 8].copy_from_slice(&w.to_le_bytes());
    }
}

struct Digest {
    a: u64,
    b: u64,
    n: u64,
}

impl Digest {
    fn fold(&mut self, x: u32) {
        let w = u64::from(x) ^ (self.n << 32);
        self.a = (self.a ^ w).wrapping_mul(0xFF51_AFD7_ED55_8CCD).rotate_left(31);
        self.b = self
            .b
            .wrapping_add((w ^ (self.b >> 29)).wrapping_mul(0xC4CE_B9FE_1A85_EC53))
            .wrapping_add(0x2545_F491_4F6C_DD1D);
        self.n += 1;
    }
}

fn run(seed: u64, kib: usize, passes: u32, short_per_64: u64, quiet: bool) -> Result<(), String> {
    let mut buf = fill(seed, kib * 1024);
    let mut d = Digest { a: seed ^ 0x6A09_E667_F3BC_C908, b: 0xBB67_AE85_84CA_A73B, n: 0 };
    let mut bytes: u64 = 0;
    for p in 0..passes {
        stamp(&mut buf, seed, u64::from(p));
        let mut s = seed ^ (u64::from(p) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555;
        let verify = p == 0 || p + 1 == passes;
        let mut at = 0;
        while at < buf.len() {
            let want = if pick(&mut s, 64) < short_per_64 {
                1 + pick(&mut s, 63) as usize
            } else {
                1024 + pick(&mut s, 63 * 1024) as usize
            };
            let end = (at + want).min(buf.len());
            let piece = &buf[at..end];
            let sum = if pick(&mut s, 4) == 0 && piece.len() > 1 {
                // resume a running sum: two calls, the second from the first's checksum
                let cut = 1 + pick(&mut s, piece.len() as u64 - 1) as usize;
                let mut h = Adler32::new();
                h.write_slice(&piece[..cut]);
                let mut h2 = Adler32::from_checksum(h.checksum());
                h2.write_slice(&piece[cut..]);
                h2.checksum()
            } else {
                let mut h = Adler32::new();
                h.write_slice(piece);
                h.checksum()
            };
            if verify && sum != plain_adler(piece, 1) {
                return Err(format!(
                    "pass {}: piece at {} of {} bytes: {:08x}, want {:08x}",
                    p,
                    at,
                    piece.len(),
                    sum,
                    plain_adler(piece, 1)
                ));
            }
            d.fold(sum);
            bytes += piece.len() as u64;
            at = end;
        }
    }
    if !quiet {
        println!(
            "seed {} kib {} passes {} pieces {} bytes {} digest {:016x}{:016x}",
            seed, kib, passes, d.n, bytes, d.a, d.b
        );
    }
    Ok(())
}

fn selftest() -> Result<(), String> {
    // Known values, every length up to 300 at every offset up to 16, long runs of 0xFF (the
    // largest sums before a reduction), and the reader interface on memory and on a file.
    let known: [(&[u8], u32); 3] = [(b"", 1), (b"a", 0x0062_0062), (b"Wikipedia", 0x11E6_0398)];
    for (data, want) in known.iter() {
        if adler32_slice(data) != *want {
            return Err(format!("{:?}: {:08x}", data, adler32_slice(data)));
        }
    }
    let data = fill(42, 4096);
    for off in 0..16 {
        for len in 0..300 {
            let piece = &data[off..off + len];
            if adler32_slice(piece) != plain_adler(piece, 1) {
                return Err(format!("offset {} length {}", off, len));
            }
        }
    }
    for &len in [5551usize, 5552, 5553, 22207, 22208, 22209, 100_000, 1 << 20].iter() {
        let ff = vec![0xFFu8; len + 3];
        for off in 0..4 {
            let piece = &ff[off..off + len];
            if adler32_slice(piece) != plain_adler(piece, 1) {
                return Err(format!("0xFF run of {} at offset {}", len, off));
            }
        }
    }
    let mut cursor = std::io::Cursor::new(&data[..]);
    match adler32_reader(&mut cursor) {
        Ok(sum) if sum == plain_adler(&data, 1) => {}
        other => return Err(format!("adler32_reader gave {:?}", other)),
    }
    // a reader that can fail: this program's own file, through a small buffer
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let exe = std::fs::read(&me).map_err(|e| e.to_string())?;
    let file = std::fs::File::open(&me).map_err(|e| e.to_string())?;
    let mut reader = std::io::BufReader::with_capacity(3000, file);
    match adler32_reader(&mut reader) {
        Ok(sum) if sum == plain_adler(&exe, 1) => {}
        other => return Err(format!("adler32_reader on a file gave {:?}", other)),
    }
    run(3, 256, 2, 8, true)?;
    run(4, 64, 2, 64, true)?;
    println!("selftest ok");
    Ok(())
}

fn usage() -> ! {
    eprintln!("usage: evo-bench run --seed N [--kib K] [--passes P] [--short S]\n       evo-bench selftest");
    exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() >= 2 && args[1] == "selftest" {
        if let Err(e) = selftest() {
            eprintln!("selftest: {}", e);
            exit(1);
        }
        return;
    }
    if args.len() < 2 || args[1] != "run" || args.len() % 2 != 0 {
        usage();
    }
    let (mut seed, mut kib, mut passes, mut short) = (None, 4096usize, 100u32, 4u64);
    for kv in args[2..].chunks(2) {
        let v: u64 = match kv[1].parse() {
            Ok(v) => v,
            Err(_) => usage(),
        };
        match kv[0].as_str() {
            "--seed" => seed = Some(v),
            "--kib" if v >= 1 && v <= 1 << 20 => kib = v as usize,
            "--passes" if v >= 1 && v <= 1_000_000 => passes = v as u32,
            "--short" if v <= 64 => short = v,
            _ => usage(),
        }
    }
    let seed = seed.unwrap_or_else(|| usage());
    if let Err(e) = run(seed, kib, passes, short, false) {
        eprintln!("{}", e);
        exit(2);
    }
}
