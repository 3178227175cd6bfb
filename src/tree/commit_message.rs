//! The commit message of a patch written by `git format-patch`: its `Subject:` header (without
//! the `[PATCH n/m]` tag, continuation lines unfolded) and the body up to the `---` line before
//! the diff. `evo confirm` takes it as the candidate's stated reason when none is given
//! (docs/design.md §2.2.1); like any candidate-written text it is quoted escaped (§5.11).

/// The message, or `None` when the patch has no mail header with a `Subject:` (a plain `git
/// diff`) or the message is empty.
pub fn format_patch_message(patch: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(patch);
    let mut lines = text.lines();
    // `From <sha> Mon Sep 17 00:00:00 2001`, then the mail headers up to an empty line.
    if !lines.next()?.starts_with("From ") {
        return None;
    }
    let mut subject: Option<String> = None;
    let mut in_subject = false;
    for line in lines.by_ref() {
        if line.is_empty() {
            break;
        }
        if in_subject && line.starts_with([' ', '\t']) {
            if let Some(s) = subject.as_mut() {
                s.push(' ');
                s.push_str(line.trim());
            }
            continue;
        }
        in_subject = false;
        if let Some(rest) = line.strip_prefix("Subject:") {
            subject = Some(rest.trim().to_string());
            in_subject = true;
        }
    }
    let subject = strip_tag(&subject?).to_string();
    let mut body = Vec::new();
    for line in lines {
        if line == "---" || line.starts_with("diff --git ") {
            break;
        }
        body.push(line);
    }
    while body.last().is_some_and(|l| l.trim().is_empty()) {
        body.pop();
    }
    let message = match body.is_empty() {
        true => subject,
        false => format!("{subject}\n\n{}", body.join("\n")),
    };
    let message = message.trim().to_string();
    (!message.is_empty()).then_some(message)
}

/// `[PATCH 2/3] fix it` → `fix it`; also `[PATCH v2]`, `[RFC PATCH]`.
fn strip_tag(subject: &str) -> &str {
    match subject
        .strip_prefix('[')
        .and_then(|rest| rest.split_once(']'))
    {
        Some((tag, rest)) if tag.contains("PATCH") => rest.trim_start(),
        _ => subject,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT_PATCH: &str = "From 1234567890abcdef1234567890abcdef12345678 Mon Sep 17 00:00:00 2001\n\
From: A Author <a@example.com>\n\
Date: Tue, 1 Dec 2026 12:00:00 +0000\n\
Subject: [PATCH 1/2] Sum with a running total instead of\n rescanning the prefix\n\
\n\
The inner loop summed the prefix again for every element.\n\
Keep the total instead.\n\
---\n prog.c | 2 +-\n 1 file changed\n\n\
diff --git a/prog.c b/prog.c\n";

    #[test]
    fn the_subject_and_body_of_a_format_patch_are_its_message() {
        assert_eq!(
            format_patch_message(FORMAT_PATCH.as_bytes()).as_deref(),
            Some(
                "Sum with a running total instead of rescanning the prefix\n\n\
                 The inner loop summed the prefix again for every element.\n\
                 Keep the total instead."
            )
        );
    }

    #[test]
    fn a_plain_diff_or_a_header_without_subject_has_no_message() {
        assert_eq!(
            format_patch_message(b"diff --git a/x b/x\n--- a/x\n+++ b/x\n"),
            None
        );
        assert_eq!(
            format_patch_message(b"From 12 Mon Sep 17 00:00:00 2001\nFrom: a\n\n---\n"),
            None
        );
    }

    #[test]
    fn a_subject_alone_is_the_message() {
        let patch = "From 12 Mon Sep 17 00:00:00 2001\nSubject: [PATCH v2] Faster\n\n---\n x\n";
        assert_eq!(
            format_patch_message(patch.as_bytes()).as_deref(),
            Some("Faster")
        );
    }
}
