use super::*;

#[test]
fn nodes_reporters_roam_unless_the_config_names_cpus() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write config");
        path
    };
    assert!(reporters_roam(None).expect("no config"));
    let silent = config("silent.toml", "rate_limit_per_sec = 0\n");
    assert!(reporters_roam(Some(&silent)).expect("parses"));
    let named = config("named.toml", "[reporting]\ncpus = \"1\"\n");
    assert!(!reporters_roam(Some(&named)).expect("parses"));
    let bad = config("bad.toml", "[reporting]\ncpus = \"x\"\n");
    assert!(reporters_roam(Some(&bad)).is_err());
}
