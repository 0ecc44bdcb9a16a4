//! Every reason the projection refuses a step, one named variant each. The
//! text is what users see (the specification's wording where it gives one,
//! e.g. `unsupported write_to_file append`); the specifics of one refusal
//! (a field, a value) travel separately in [`super::ProjectionRefusal::detail`].

macro_rules! reasons {
    ($( $variant:ident => $text:literal; )*) => {
        /// A named projection refusal.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Reason { $( #[doc = $text] $variant, )* }

        impl Reason {
            /// Every reason, in catalogue order.
            pub const ALL: &'static [Reason] = &[ $( Reason::$variant, )* ];

            /// The user-facing wording.
            pub fn text(self) -> &'static str { match self { $( Reason::$variant => $text, )* } }
        }
    };
}

reasons! {
    // The engine: a generic step no rule qualifies.
    GenericWithoutPayload => "generic step type without a generic payload";
    GenericUnderOtherType => "generic payload under another step type";
    UnsupportedAnyType => "unsupported generic payload type";
    ModernToolPayload => "unsupported modern tool payload";
    UnqualifiedGeneric => "no qualified presentation for this generic step";
    StoredUndecodable => "stored trajectory does not decode";

    // Embedded native Steps.
    EmbeddedUndecodable => "embedded Step does not decode";
    EmbeddedType => "unsupported embedded native step type";
    EmbeddedBody => "embedded native step body does not match its type";
    EmbeddedOuterOnlyType => "native type qualified only under an outer error";
    WrapperTool => "wrapper tool does not match the embedded native type";
    WrapperArgument => "wrapper argument outside the tool's allow-list";
    WrapperField => "unsupported wrapper field";
    NativeField => "unsupported native step field";
    WrapperResultField => "unsupported wrapper result field";
    InnerOnlyTaskDetails => "inner-only task details";
    ConflictingTaskDetails => "conflicting task details";
    StatusMismatch => "wrapper and native status differ";
    CanceledCombination => "unsupported canceled/native status combination";

    // The outer-error rule.
    OuterErrorStatus => "outer error on a wrapper whose status is not ERROR";
    OuterErrorNativeType => "outer error over an unqualified native type";
    OuterErrorNativeStatus => "outer error over a native Step that is not ERROR";
    OuterErrorShortError => "outer and native short errors differ";
    OuterErrorText => "outer error with more than short and full text";

    // Permission records.
    PermissionOneCopy => "permission record on one copy only";
    PermissionCopiesDiffer => "permission copies differ";
    PermissionStatus => "permission record on a step that is not DONE";
    PermissionTool => "permission record for another tool or native type";
    PermissionGrant => "unsupported permission grant";
    PermissionRequest => "unsupported permission request";
    PermissionTrigger => "another permission trigger";
    PermissionRejected => "rejected permission request";
    PermissionAnswer => "unsupported permission answer";

    // Argument rules.
    ContentOffset => "unsupported view_file ContentOffset";
    WriteToFileAppend => "unsupported write_to_file append";

    // generate_image.
    FailedImage => "unsupported failed generate_image";
    ImageStatus => "embedded image step not DONE on both sides";
    ImageMedia => "wrapper media does not match the native generated media";
    ImagePayloadField => "unqualified GenerateImage payload field";
    ImagePayloadMedia => "missing or multiple generate_image media items";
    ImagePayloadUri => "generate_image media URI disagrees with the payload's image URI";
    ImagePayloadStep => "unsupported generate_image payload step";
    ImagePayloadArgs => "generate_image arguments other than exactly AspectRatio, ImageName and Prompt, each the payload's, repeating the retained tool call";

    // list_resources.
    ListResourcesOutcome => "list_resources other than an ERROR wrapper over an ERROR native step with the same short error";
    ListResourcesArguments => "list_resources arguments disagree with the native step";
    ListResourcesShape => "list_resources native body or wrapper result outside the qualified shape";
    ListResourcesRecords => "task details, permission or interaction records on list_resources";

    // The run_command bridge formatting failure.
    BridgeError => "bridge formatting error outside the qualified text";
    BridgeCommand => "bridged command outside the qualified outcome";
    BridgeHistory => "bridged command status histories outside PENDING, RUNNING, ERROR and PENDING, RUNNING";
    BridgeRecords => "native error, task details, permission or interaction records on a bridged command";
    BridgeResult => "bridged command result other than the native payload";

    // Resultless wrappers.
    ResultlessNoError => "resultless wrapper without an outer error";
    ResultlessExtraField => "resultless wrapper with extra wrapper fields";
    ResultlessTool => "resultless wrapper for another tool";
    ResultlessStatus => "resultless wrapper with another status";
    ResultlessArguments => "resultless wrapper arguments outside the tool's bounds";
    ResultlessErrorPrefix => "resultless wrapper error outside its qualified text";
    ArgumentsRepeatToolCall => "dropped arguments do not repeat the presented tool call";
    HookDenyResult => "hook results other than one deny whose reason the error repeats";
    HookDeniedErrorText => "hook-denied short error other than the prefix and the deny hook's reason";
    ResultlessFullError => "resultless wrapper full error missing, empty or other than its qualified text";
    HookAllowResult => "hook results other than the one allow";
    RejectedInteraction => "missing, second or unqualified interaction record";
    RejectedAnswer => "an answer that allows";
    RejectedTrigger => "another trigger";
    RejectedGrant => "a grant on a rejected request";
    RejectedBypass => "BypassSandbox other than \"false\"";
    RejectedBypassTopLevel => "BypassSandbox on a call outside a subagent's conversation";
    CanceledPromptRecord => "outer error, grant, interaction record or task details on a canceled prompt";
    CanceledPromptHistory => "status history not ending WAITING, RUNNING, CANCELED";
    ResultlessViewFile => "unsupported resultless view_file";

    // Missing toolSummary.
    MissingSummaryError => "another error than the missing toolSummary rejection";
    MissingSummaryOutcome => "missing toolSummary rejection outside status INVALID, BUILTIN source and PENDING, INVALID history";
    MissingSummaryArguments => "arguments outside the missing toolSummary command or read shape";
    MissingSummaryRecords => "result, task details, permission or interaction records on a missing toolSummary rejection";

    // history2 skill registry.
    SkillBinding => "skill registration with a non-unique execution binding";
    SkillNotOnlyMatch => "skill registration is not the only exact-path match";
    SkillExecutorOrder => "earlier skill registration without unique nonempty executor IDs and valid ordering";

    // Payload-free generic steps.
    PayloadFreeTool => "payload-free step for another tool";
    PayloadFreeArguments => "payload-free arguments outside the tool's bounds";
    PayloadFreeResult => "payload-free result fields outside the tool's bounds";
    PayloadFreeMetadataKeys => "result metadata keys outside the tool's bounds";
    PayloadFreeOuterError => "outer error on a payload-free wrapper";
    PayloadFreeStatus => "payload-free step with another status";
    PayloadFreeRecords => "task details, permission or interaction records on a payload-free step";
    SendInputArguments => "empty or mismatched send_input arguments";
    SendInputMetadata => "send_input result metadata outside input, task_id, task_description and tool_name";
    SendInputTarget => "send_input target tool other than run_command";
    SendInputExecution => "send_input without the built-in tool source and exactly one allow hook";

    // Modern (agy 1.4.x) tool payloads: tools143, permission1, tools144, skill146.
    ModernDeclaration => "modern payload declaration missing from the loaded descriptors";
    ModernPresentedField => "presented native field missing from the loaded descriptors";
    ModernPayloadUndecodable => "modern tool payload does not decode";
    ModernPayloadField => "newly populated modern payload field";
    ModernTool => "modern payload under another tool name";
    ModernStatus => "modern tool step outside its qualified status and outcome";
    ModernArguments => "modern tool arguments outside the qualified names or disagreeing with the payload";
    ModernWrapperField => "modern wrapper field outside the qualified shape";
    ModernPath => "modern path requiring URI normalization";
    ModernRange => "modern read range outside one-based 1 <= StartLine <= EndLine";
    ModernEditKind => "file edit kind other than CREATE or EDIT";
    ModernTaskMode => "subagent invocation in task mode";
    ModernWorkspace => "subagent workspace selector other than inherit repeating the metadata tool call";
    ModernTaskAction => "manage_task other than a single-task status, list or kill";
    ModernTimer => "schedule other than a canceled timer";
    ModernSubagentsList => "manage_subagents other than a list of two conversation IDs";
    ModernResultMetadata => "stored result metadata on a modern step whose metadata the payload derives";
    ModernPermissionRecord => "permission grant or completed interaction on a modern tool wrapper";
    BackgroundHistory => "canceled background command without the PENDING, RUNNING, CANCELED history";
    BackgroundTimestamp => "canceled background command without task details and their background timestamp";
    BackgroundWait => "canceled background command without exactly CommandLine, Cwd and the 5000 ms wait argument";
    BackgroundResult => "canceled background command result other than render-only";

    // ---- ide225 / finish147 / replay147 (Antigravity IDE 2.25, agy 1.4.7) ----
    ModernToolCallRepeat => "modern arguments not repeated in the retained tool call";
    Ide225ByteOffset => "read_file ByteOffset other than a canonical 0 that the payload repeats";
    Ide225ArtifactFlag => "artifact metadata without the isArtifactFile flag";
    Ide225EditMetadata => "artifact metadata on a file edit";
    Ide225ArtifactMetadata => "artifact create without an ArtifactMetadata argument matching the retained tool call and the payload";
    Ide225MetadataField => "unqualified artifact metadata field";
    Ide225RequestFeedback => "ArtifactMetadata RequestFeedback other than false";
    FinishSchema => "Finish without a result schema";
    FinishResult => "Finish result other than its arguments";
    ImageReadMediaCount => "image read with other than exactly one persisted media item";
    ImageReadMime => "image read media type other than JPEG, PNG or WebP";
    ImageReadExternal => "image read media with an external URI instead of inline bytes";
    ImageReadText => "image read result text not naming its media type";
    ImageReadBytes => "image read byte count other than the inline media's length";
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_distinct() {
        let mut t: Vec<&str> = Reason::ALL.iter().map(|r| r.text()).collect();
        t.sort_unstable();
        let n = t.len();
        t.dedup();
        assert_eq!(n, t.len());
    }
}
