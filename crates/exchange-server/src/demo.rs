//! Demo accounts and market activity (being built).

use std::path::Path;

use crate::config::Config;
use crate::sequencer::Handle;
use crate::server::ServerError;

pub async fn start(_handle: Handle, _data_dir: &Path, _config: &Config) -> Result<(), ServerError> {
    Ok(())
}
