//! The native Step types a generic wrapper may embed or be presented as,
//! by their enum value names. A leaf: constants only.

pub(crate) const RUN_COMMAND: &str = "CORTEX_STEP_TYPE_RUN_COMMAND";
pub(crate) const VIEW_FILE: &str = "CORTEX_STEP_TYPE_VIEW_FILE";
pub(crate) const CODE_ACTION: &str = "CORTEX_STEP_TYPE_CODE_ACTION";
pub(crate) const INVOKE_SUBAGENT: &str = "CORTEX_STEP_TYPE_INVOKE_SUBAGENT";
pub(crate) const LIST_RESOURCES: &str = "CORTEX_STEP_TYPE_LIST_RESOURCES";
pub(crate) const GENERATE_IMAGE: &str = "CORTEX_STEP_TYPE_GENERATE_IMAGE";
pub(crate) const GREP_SEARCH: &str = "CORTEX_STEP_TYPE_GREP_SEARCH";
pub(crate) const MCP_TOOL: &str = "CORTEX_STEP_TYPE_MCP_TOOL";
pub(crate) const READ_URL_CONTENT: &str = "CORTEX_STEP_TYPE_READ_URL_CONTENT";
pub(crate) const SEARCH_WEB: &str = "CORTEX_STEP_TYPE_SEARCH_WEB";
