//! `oci://REGISTRY/REPOSITORY:TAG` and `oci://REGISTRY/REPOSITORY@sha256:HEX`: a plugin in
//! an OCI registry, by tag or pinned by digest.

use std::fmt;
use std::str::FromStr;

/// The scheme of an OCI module in a config and on the command line.
pub const OCI_SCHEME: &str = "oci://";

/// A component in an OCI registry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OciReference {
    /// The registry's host, with its port if any: `ghcr.io`, `127.0.0.1:5000`.
    pub registry: String,
    /// The repository within it: `vendor/nlb0-plugin`.
    pub repository: String,
    /// The tag, when the reference names one.
    pub tag: Option<String>,
    /// The manifest's digest (`sha256:<hex>`), when the reference pins one.
    pub digest: Option<String>,
}

impl OciReference {
    /// `registry/repository`: what cosign's payload names as the signed image's identity.
    pub fn docker_reference(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The same repository at `tag`, without a digest: where cosign keeps a manifest's
    /// signatures (`sha256-<hex>.sig`).
    pub fn with_tag(&self, tag: &str) -> OciReference {
        OciReference {
            tag: Some(tag.to_string()),
            digest: None,
            ..self.clone()
        }
    }
}

impl fmt::Display for OciReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{OCI_SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl FromStr for OciReference {
    type Err = String;

    /// Reads `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`; one of the tag and the digest
    /// must be given. The error says what is wrong and shows the expected form.
    fn from_str(text: &str) -> Result<OciReference, String> {
        let form = "expected oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:<64 hex digits>";
        let rest = text
            .strip_prefix(OCI_SCHEME)
            .ok_or_else(|| format!("'{text}' does not start with {OCI_SCHEME}: {form}"))?;
        let (rest, digest) = match rest.split_once('@') {
            Some((rest, digest)) => {
                check_digest(digest).map_err(|why| format!("'{text}': {why}"))?;
                (rest, Some(digest.to_string()))
            }
            None => (rest, None),
        };
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| format!("'{text}' names no repository: {form}"))?;
        // A tag follows the last ':' after the last '/' (a registry's port has one before).
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag.to_string())),
            _ => (path, None),
        };
        if tag.is_none() && digest.is_none() {
            return Err(format!("'{text}' names neither a tag nor a digest: {form}"));
        }
        if !valid_registry(registry) {
            return Err(format!(
                "'{text}': '{registry}' is not a registry host (letters, digits, '.', '-', and an optional :PORT)"
            ));
        }
        if !valid_repository(repository) {
            return Err(format!(
                "'{text}': '{repository}' is not a repository name (lower-case letters, digits and \
                 '.', '_', '-' between them, in '/'-separated parts)"
            ));
        }
        if let Some(tag) = &tag
            && !valid_tag(tag)
        {
            return Err(format!(
                "'{text}': '{tag}' is not a tag (up to 128 letters, digits, '_', '.' and '-', \
                 not starting with '.' or '-')"
            ));
        }
        Ok(OciReference {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }
}

/// Checks `sha256:<64 lower-case hex digits>`, the one digest form the store keeps.
pub fn check_digest(digest: &str) -> Result<(), String> {
    match digest.strip_prefix("sha256:") {
        Some(hex)
            if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "'{digest}' is not a digest: expected sha256: and 64 lower-case hex digits"
        )),
    }
}

fn valid_registry(registry: &str) -> bool {
    let (host, port) = match registry.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (registry, None),
    };
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
        && !host.starts_with(['.', '-'])
        && port.is_none_or(|p| p.parse::<u16>().is_ok())
}

fn valid_repository(repository: &str) -> bool {
    !repository.is_empty()
        && repository.len() <= 255
        && repository.split('/').all(|part| {
            !part.is_empty()
                && part.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && part.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && part.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
                })
                && !part.contains("..")
        })
}

fn valid_tag(tag: &str) -> bool {
    (1..=128).contains(&tag.len())
        && !tag.starts_with(['.', '-'])
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_by_tag_and_by_digest_read_and_print_back() {
        let digest = format!("sha256:{}", "0f".repeat(32));
        let by_tag: OciReference = "oci://127.0.0.1:5000/vendor/nlb0:1.2".parse().unwrap();
        assert_eq!(by_tag.registry, "127.0.0.1:5000");
        assert_eq!(by_tag.repository, "vendor/nlb0");
        assert_eq!(by_tag.tag.as_deref(), Some("1.2"));
        assert_eq!(by_tag.digest, None);
        assert_eq!(by_tag.to_string(), "oci://127.0.0.1:5000/vendor/nlb0:1.2");
        assert_eq!(by_tag.docker_reference(), "127.0.0.1:5000/vendor/nlb0");
        let text = format!("oci://ghcr.io/vendor/nlb0@{digest}");
        let by_digest: OciReference = text.parse().unwrap();
        assert_eq!(by_digest.tag, None);
        assert_eq!(by_digest.digest.as_deref(), Some(digest.as_str()));
        assert_eq!(by_digest.to_string(), text);
        assert_eq!(
            by_digest.with_tag("x").to_string(),
            "oci://ghcr.io/vendor/nlb0:x"
        );
    }

    #[test]
    fn malformed_references_are_refused_with_the_part_that_is_wrong() {
        let err = |text: &str| text.parse::<OciReference>().unwrap_err();
        assert!(err("ghcr.io/a:b").contains("does not start with oci://"));
        assert!(err("oci://ghcr.io").contains("names no repository"));
        assert!(err("oci://ghcr.io/a").contains("names neither a tag nor a digest"));
        assert!(err("oci://ghcr.io/a@sha256:12").contains("is not a digest"));
        assert!(err("oci://ghcr.io/../etc:x").contains("is not a repository name"));
        assert!(err("oci://ghcr.io/A/b:x").contains("is not a repository name"));
        assert!(err("oci://gh cr.io/a:x").contains("is not a registry host"));
        assert!(err("oci://ghcr.io:99999/a:x").contains("is not a registry host"));
        assert!(err("oci://ghcr.io/a:.hidden").contains("is not a tag"));
        assert!(err("oci://ghcr.io/a:x/y").contains("names neither a tag nor a digest"));
    }
}
