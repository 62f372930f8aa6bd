//! Throwaway certificates for `accelhost bench`'s loopback mutual-TLS node, and the proxy
//! config that reaches it with them.

use std::path::{Path, PathBuf};

use accelhost::Config;

/// Throwaway certificates for the bench's loopback mutual-TLS listener, in a folder: a CA and
/// a certificate (`localhost`) for the node, a CA and a certificate for its one client.
pub struct BenchPki {
    dir: PathBuf,
}

impl BenchPki {
    /// The client certificate's name, as the node's client entry recognizes it.
    pub const CLIENT: &str = "bench.client";

    pub fn make(dir: &Path) -> anyhow::Result<BenchPki> {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        std::fs::create_dir_all(dir)?;
        let ca = |name: &str| -> anyhow::Result<CertifiedIssuer<'static, KeyPair>> {
            let mut params = CertificateParams::new(Vec::<String>::new())?;
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, name);
            Ok(CertifiedIssuer::self_signed(params, KeyPair::generate()?)?)
        };
        let leaf = |name: &str, san: &str, issuer: &CertifiedIssuer<'static, KeyPair>| {
            let key = KeyPair::generate()?;
            let cert = CertificateParams::new(vec![san.to_string()])?.signed_by(&key, issuer)?;
            std::fs::write(dir.join(format!("{name}.pem")), cert.pem())?;
            std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem())?;
            anyhow::Ok(())
        };
        let (node_ca, client_ca) = (ca("bench node CA")?, ca("bench client CA")?);
        std::fs::write(dir.join("node-ca.pem"), node_ca.pem())?;
        std::fs::write(dir.join("client-ca.pem"), client_ca.pem())?;
        leaf("node", "localhost", &node_ca)?;
        leaf("client", Self::CLIENT, &client_ca)?;
        Ok(BenchPki {
            dir: dir.to_path_buf(),
        })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A config whose only plugin is `builtin:remote`, reaching the node at `address` with
    /// the client certificate.
    pub fn proxy_config(&self, address: std::net::SocketAddr) -> anyhow::Result<Config> {
        let endpoint = address.to_string();
        let tls = serde_json::json!({
            "ca": self.file("node-ca.pem"),
            "certificate": self.file("client.pem"),
            "key": self.file("client.key"),
            "server_name": "localhost",
        });
        let text = serde_json::json!({
            "plugins": [{
                "name": "remote",
                "module": "builtin:remote",
                "config": {"hosts": [endpoint]},
                "grants": {"remote": [{"endpoint": endpoint, "tls": tls}], "dma_memory_mib": 2048},
                "load_policy": {"busy_percent": 100},
            }]
        });
        let path = self.file("proxy.json");
        std::fs::write(&path, text.to_string())?;
        Ok(Config::load(&path)?)
    }
}
