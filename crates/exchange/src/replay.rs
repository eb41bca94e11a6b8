use std::path::Path;

pub fn run(_file: &Path, _final_state: Option<&Path>) -> anyhow::Result<()> {
    anyhow::bail!("replay is being built")
}
