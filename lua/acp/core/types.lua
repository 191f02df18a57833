---@meta
-- The contract between the Rust core and the Lua view, for LuaLS and for
-- readers: every event the core hands to `require('acp.core.dispatch').dispatch`
-- in a drained batch, every call it makes into the main thread, and every
-- function of the native module (reached only through `acp.core`).
-- tests/test_contract.lua checks this file against the loaded core and the
-- events of a real chat: a class `acp.Event.<type>` per event type, and one
-- `---@field` per native function in `acp.Native`.
--
-- Values that come from the agent unchanged (commands, config options,
-- usage, modes, a permission request) keep the protocol's camelCase keys;
-- what the core builds itself uses snake_case. JSON `null` arrives as nil.

-- Small types -------------------------------------------------------------------

--- Tool kinds of the protocol; an unknown kind is kept as the agent sent it
--- in entries, and shown as `other` on cards.
---@alias acp.ToolKind 'read'|'edit'|'delete'|'move'|'search'|'execute'|'think'|'fetch'|'switch_mode'|'other'|string

--- Tool call statuses of the protocol; an unknown one is kept as sent.
---@alias acp.ToolStatus 'pending'|'in_progress'|'completed'|'failed'|string

--- What the client adds on top of the agent's status.
---@alias acp.ClientState 'waiting_for_you'|'rejected'|'cancelled'

---@alias acp.PermissionOptionKind 'allow_once'|'allow_always'|'reject_once'|'reject_always'|string

---@alias acp.PlanStatus 'pending'|'in_progress'|'completed'|string
---@alias acp.PlanPriority 'high'|'medium'|'low'|string

--- A chat's connection and turn.
---@alias acp.TurnState 'connecting'|'idle'|'running'|'disconnected'

--- Kinds of transcript entries.
---@alias acp.EntryKind 'user'|'heading'|'agent'|'thought'|'tool_call'|'plan'|'notice'|'subagent'|'agent_notice'|'compaction'

---@alias acp.NoticeLevel 'info'|'warn'|'error'

-- Tool cards ----------------------------------------------------------------------

--- A tool card as the view uses it (quickfix, follow mode, diff colours, the
--- card key); the whole card (diff texts) comes from `acp.core.entry`.
---@class acp.CardMeta
---@field id string The agent's toolCallId.
---@field title string
---@field kind acp.ToolKind
---@field status acp.ToolStatus
---@field client_state? acp.ClientState
---@field locations acp.CardLocation[]
--- Empty parts are absent (nil): no diff, no terminal, no status words.
---@field has_diff? true
--- Rows { first, last } of the diff bodies, 0-based from the card's first line.
---@field diff_rows? integer[][]
--- Terminal ids shown on the card (client-run or streamed by the agent).
---@field terminals? string[]
---@field header acp.CardHeader Where the parts of the card's first line are.
--- The status words of its terminals and commands (`running…`, `exit code 0`).
---@field status_lines? acp.StatusMark[]

--- How a status reads: the view colours its word by it.
---@alias acp.Tone 'done'|'running'|'failed'|'waiting'|'cancelled'

--- Bytes `from`..`to` (0-based, `to` excluded) of a line of a rendering.
---@class acp.Span
---@field from integer
---@field to integer

--- A card's first line, `label · title · status`: where each part is, and
--- the tone of the status (none for a status the protocol does not define).
---@class acp.CardHeader
---@field label acp.Span
---@field title acp.Span
---@field status acp.Span
---@field tone? acp.Tone

--- A status word in an entry's body.
---@class acp.StatusMark
---@field row integer 0-based from the entry's first line.
---@field from integer
---@field to integer
---@field tone acp.Tone

--- A plan (`Plan · N/M done`, then its steps): where its label is on the
--- first line, and the status word of each running step.
---@class acp.PlanLayout
---@field label acp.Span
---@field steps acp.StatusMark[]

---@class acp.CardLocation
---@field path string
---@field line? integer 1-based (an agent's 0 is read as 1).

-- Events of a drained batch ----------------------------------------------------------
-- Thread events carry `thread`, the chat's id from `open_thread`.

--- A new entry at the end of the transcript.
---@class acp.Event.added
---@field type 'added'
---@field thread integer
---@field index integer Stable entry id (0-based).
---@field kind acp.EntryKind
---@field lines string[] Its rendering.

--- Text appended to the last line of the last entry (may hold newlines).
---@class acp.Event.appended
---@field type 'appended'
---@field thread integer
---@field index integer
---@field text string

--- The entry's whole rendering changed.
---@class acp.Event.replaced
---@field type 'replaced'
---@field thread integer
---@field index integer
---@field lines string[]

--- The chat's state for the status line.
---@class acp.Event.status
---@field type 'status'
---@field thread integer
---@field state acp.TurnState
---@field detail string
---@field sign_in? true The agent refused to open a session or answer until the user signs in (ACP "auth required"); absent otherwise.

--- The chat is bound to this agent session.
---@class acp.Event.session
---@field type 'session'
---@field thread integer
---@field session_id string

--- `session_info_update`: the session's title (nil: the agent cleared it).
---@class acp.Event.title
---@field type 'title'
---@field thread integer
---@field title? string

--- `session_info_update`: the session's last activity, ISO 8601 as sent
--- (nil: the agent cleared it).
---@class acp.Event.updated_at
---@field type 'updated_at'
---@field thread integer
---@field updated_at? string

--- What the view colours in an agent notice or a compaction, right after
--- each `added`/`replaced` of one: `role` is `label`, a notice's severity
--- (`info`, `warning`, `error`) or a status tone (acp.Tone).
---@class acp.Event.marks
---@field type 'marks'
---@field thread integer
---@field index integer
---@field marks { row: integer, from: integer, to: integer, role: string }[]

--- A live `notice` of the agent (its entry comes as `added`, kind
--- `agent_notice`): warnings and errors also go to `vim.notify`.
---@class acp.Event.agent_notice
---@field type 'agent_notice'
---@field thread integer
---@field severity 'info'|'warning'|'error'|string
---@field title string
---@field description? string

--- The current session mode (`current_mode_update`, `set_mode`).
---@class acp.Event.mode
---@field type 'mode'
---@field thread integer
---@field mode_id string

--- The modes the agent offers (`session/new`'s `modes`), as sent.
---@class acp.Event.modes
---@field type 'modes'
---@field thread integer
---@field modes acp.SessionModes

---@class acp.SessionModes
---@field currentModeId? string
---@field availableModes? { id: string, name?: string, description?: string }[]

--- `available_commands_update`: the slash commands, as sent.
---@class acp.Event.commands
---@field type 'commands'
---@field thread integer
---@field commands { name: string, description?: string, input?: { hint?: string } }[]

--- `config_option_update`: the session's config options, as sent.
---@class acp.Event.config_options
---@field type 'config_options'
---@field thread integer
---@field options { id: string, name?: string, category?: string, type?: string, currentValue?: any, options?: table[] }[]

--- The legacy `models` of a session answer (config options win over them).
---@class acp.Event.models
---@field type 'models'
---@field thread integer
---@field models { availableModels: { modelId: string, name?: string, description?: string }[], currentModelId?: string }

--- `usage_update` without its `sessionUpdate` key (used, size, cost...).
---@class acp.Event.usage
---@field type 'usage'
---@field thread integer
---@field usage { used?: number, size?: number, cost?: { amount: number, currency: string } }

--- A tool card's metadata, right after each `added`/`replaced` of it.
---@class acp.Event.card
---@field type 'card'
---@field thread integer
---@field index integer
---@field card acp.CardMeta

--- The agent of the chat, once its session opened (right before the chat
--- goes ready); again after a reconnect.
--- Where a plan's parts are, right after each `added`/`replaced` of it.
---@class acp.Event.plan
---@field type 'plan'
---@field thread integer
---@field index integer
---@field plan acp.PlanLayout

---@class acp.Event.agent
---@field type 'agent'
---@field thread integer
---@field name string The agent's name (`agentInfo.name`, else the configured one).
---@field info? acp.AgentInfo `agentInfo` from `initialize`.
---@field capabilities? acp.AgentCapabilities `agentCapabilities` from `initialize`.
---@field steering boolean The agent takes `_session/steering` (its `initialize` answer's `_meta.steering`, or its capabilities').

--- A prompt was sent: turn `turn` runs.
---@class acp.Event.turn_started
---@field type 'turn_started'
---@field thread integer
---@field turn integer

--- A turn ended: the agent's stop reason (`end_turn`, `cancelled`,
--- `max_tokens`, `refusal`, ...), or `error` / `disconnected`.
---@class acp.Event.turn_ended
---@field type 'turn_ended'
---@field thread integer
---@field turn integer
---@field stop_reason string
---@field duration_ms integer
---@field usage? { totalTokens?: integer, inputTokens?: integer, outputTokens?: integer } The prompt answer's `usage`.

---@class acp.AgentInfo
---@field name? string
---@field title? string
---@field version? string

---@class acp.AgentCapabilities
---@field loadSession? boolean
---@field promptCapabilities? acp.PromptCapabilities
---@field mcpCapabilities? { http?: boolean, sse?: boolean }
---@field sessionCapabilities? { fork?: { atMessageId?: boolean }, resume?: table, close?: table, list?: table } `fork` is unstable (`atMessageId`: a fork at a message)

---@class acp.PromptCapabilities
---@field image? boolean
---@field audio? boolean
---@field embeddedContext? boolean

--- Output of a terminal the view may show (client-run or agent-streamed).
---@class acp.Event.terminal_output
---@field type 'terminal_output'
---@field thread integer
---@field id string
---@field data string

--- A permission request waiting for the user (answer with
--- `acp.core.answer_permission(thread, request, option_id)`).
---@class acp.Event.permission
---@field type 'permission'
---@field thread integer
---@field request integer
---@field payload acp.PermissionAsk

--- A permission request as the float shows it: what the core judged,
--- accepts and grants, and the agent's tool call for display only. Nothing
--- else of the agent's params comes along.
---@class acp.PermissionAsk
---@field tool_call_id string The tool call (card) it is about.
---@field kind acp.ToolKind The card's kind as first recorded (what the policy judged), not the request's claim.
---@field title string The card's title.
--- What the request's raw input works on: its `command`, `cmd`, `file_path`,
--- `path`, `pattern`, `query` or `url` (the first present), or the input
--- itself when it is no object; as text.
---@field summary? string
---@field files string[] The files the raw input names (`path`, `filePath`, `file_path`, `paths`, `files`, `files[].path`) when the call has no locations or diffs, relative to the project when inside it: the first 8.
---@field files_more integer How many more files the raw input names.
---@field options acp.PermissionOption[] The options the core accepts as an answer (text ids, each once), in the agent's order.
---@field grant? acp.Grant What allowing grants (execute, a card with no kind that shows a command, edit, delete, move).
---@field tool_call acp.ToolCallUpdate What the float shows of the call: the agent's `toolCall` with the content and locations of the card it points to (which holds the request's own, merged) and the card's raw input (a one-line text) when the request carries none; shown, never trusted.
---@field subagent? string The subagent that asks (its title, else its session id), when the request came from a subagent's session.

--- What allowing a permission request grants. `command`: exactly this
--- command (word for word), in `cwd`, with `env` (a `terminal/create` of it
--- runs unasked in the same turn). `files`: the files the card names.
---@class acp.Grant
---@field type 'command'|'files'
---@field command? string command
---@field cwd? string command
---@field env? table<string, string> command
---@field paths? string[] files: the card's locations, then its diffs' paths, each once

--- A tool call as the agent sent it (camelCase; diffs as `oldText`/`newText`).
---@class acp.ToolCallUpdate
---@field toolCallId? string
---@field title? string
---@field kind? acp.ToolKind
---@field status? acp.ToolStatus
---@field content? table[]
---@field locations? { path: string, line?: integer }[]
---@field rawInput? any
---@field rawOutput? any

---@class acp.PermissionOption
---@field id string
---@field name string The agent's label (its id when it sent none).
---@field kind acp.PermissionOptionKind

--- A permission request that needs no answer any more (answered, turn
--- cancelled, agent gone).
---@class acp.Event.permission_done
---@field type 'permission_done'
---@field thread integer
---@field request integer

--- An `elicitation/create` waiting for the user (answer with
--- `acp.core.answer_elicitation(request, response)`). `thread` is nil for
--- a request-scoped one (no session yet).
---@class acp.Event.elicitation
---@field type 'elicitation'
---@field thread? integer
---@field request integer
---@field payload { mode: 'form'|'url', message?: string, sessionId?: string, requestedSchema?: table, url?: string, elicitationId?: string }

--- An elicitation that needs no answer any more (answered or cancelled);
--- `withdrawn` when the agent took it back (`$/cancel_request`).
---@class acp.Event.elicitation_done
---@field type 'elicitation_done'
---@field request integer
---@field withdrawn? boolean

--- `elicitation/complete`: a URL elicitation finished.
---@class acp.Event.elicitation_complete
---@field type 'elicitation_complete'
---@field elicitation_id string

--- The agent's answer to `acp.core.request` (`result` true for `null`).
---@class acp.Event.reply
---@field type 'reply'
---@field request integer
---@field result? any
---@field error? string

---@class acp.ElicitationResponse
---@field action 'accept'|'decline'|'cancel'
---@field content? table<string, string|number|boolean|string[]>

--- A message for the user (vim.notify).
---@class acp.Event.notify
---@field type 'notify'
---@field level 'info'|'warn'|'error'
---@field message string

--- The answer to `acp.core.list_files`.
---@class acp.Event.files
---@field type 'files'
---@field request integer
---@field root string
---@field count integer
---@field truncated boolean
---@field error? string

--- A main-thread service the core needs (see "Calls" below). Answered with
--- `call_part`/`call_done`/`call_fail`, except `call` 0: a notification.
---@class acp.Event.call
---@field type 'call'
---@field call integer
---@field thread integer
---@field method 'buffer_read'|'buffer_apply'|'terminal_start'|'terminal_kill'|'write_conflict'
---@field payload acp.Call.buffer_read|acp.Call.buffer_apply|acp.Call.terminal_start|acp.Call.terminal_kill|acp.Call.write_conflict

---@alias acp.Event
---| acp.Event.added
---| acp.Event.appended
---| acp.Event.replaced
---| acp.Event.status
---| acp.Event.session
---| acp.Event.title
---| acp.Event.updated_at
---| acp.Event.marks
---| acp.Event.agent_notice
---| acp.Event.mode
---| acp.Event.modes
---| acp.Event.commands
---| acp.Event.config_options
---| acp.Event.models
---| acp.Event.usage
---| acp.Event.card
---| acp.Event.plan
---| acp.Event.agent
---| acp.Event.turn_started
---| acp.Event.turn_ended
---| acp.Event.terminal_output
---| acp.Event.permission
---| acp.Event.permission_done
---| acp.Event.elicitation
---| acp.Event.elicitation_done
---| acp.Event.elicitation_complete
---| acp.Event.reply
---| acp.Event.notify
---| acp.Event.files
---| acp.Event.call

-- Calls: payloads of `call` events and their replies ------------------------------------

--- The loaded buffer of a file the agent reads or writes. Reply: the text in
--- parts (`call_part`, lines joined by "\n"), then `acp.Reply.buffer_read`.
---@class acp.Call.buffer_read
---@field path string As the agent sent it.
---@field resolved string Its real path.
---@field whole boolean Hand the text over in this tick (the sliced reads kept going stale).
---@field sync boolean Bring the buffer up to date with its file first (false: its text as it is).

---@class acp.Reply.buffer_read
---@field found boolean
---@field stale? boolean The buffer changed between parts: the core asks again.
---@field bufnr? integer
---@field tick? integer changedtick the parts were taken at.
---@field lines? integer
---@field modified? boolean
---@field format? acp.TextFormat How the core makes the file's text of the parts.

--- The buffer options that decide how its lines are its file's text (the
--- core encodes and decodes with them: a byte order mark, line breaks).
---@class acp.TextFormat
---@field fileformat 'unix'|'dos'|'mac'
---@field bomb boolean
---@field eol boolean
---@field fixeol boolean
---@field binary boolean

--- Lines `old_start`..`old_end` (0-based, end excluded) become `lines`.
---@class acp.Hunk
---@field old_start integer
---@field old_end integer
---@field lines string[]

--- What a disk change means for a buffer with unsaved edits: nothing to
--- merge, no agreed text to merge from, both changed the same lines, or
--- merged (by the hunks).
---@alias acp.DiskMerge 'same'|'unknown'|'conflict'|'merged'

--- An agent write applied to a buffer as line edits (one undo step).
---@class acp.Call.buffer_apply
---@field bufnr integer
---@field tick integer Apply only at this changedtick (else reply `stale`).
---@field hunks { old_start: integer, old_end: integer, lines: string[] }[] Ascending, 0-based, end-exclusive.
---@field save boolean Write the buffer afterwards (it had no unsaved changes).
---@field eol boolean
---@field path string

---@class acp.Reply.buffer_apply
---@field stale? boolean
---@field error? string
---@field saved? boolean
---@field modified? boolean

--- A client terminal (`terminal/create`) to run as a job.
---@class acp.Call.terminal_start
---@field id string
---@field argv string[]
---@field env? table<string, string>
---@field cwd string
---@field command string As shown to the user.

---@class acp.Reply.terminal_start
---@field pid? integer
---@field error? string

--- Ends a client terminal's process group (a notification: call 0).
---@class acp.Call.terminal_kill
---@field id string
---@field pid integer

--- An agent write refused (a notification: call 0): its change and a
--- change on disk both touch lines `first`..`last`. The chat shows the
--- conflict; `:AcpConflict` compares `text` (the agent's) with the file.
---@class acp.Call.write_conflict
---@field path string As the agent sent it.
---@field resolved string Its real path.
---@field text string The agent's text, not written.
---@field first integer
---@field last integer

---@alias acp.Reply acp.Reply.buffer_read|acp.Reply.buffer_apply|acp.Reply.terminal_start

-- Values of native functions ---------------------------------------------------

---@class acp.InitOpts
---@field log_file? string
---@field log_max_bytes? integer the log is rotated past this size (two old files kept)
---@field secret_names? string[] name patterns whose values the log and saved traces hide
---@field kept_text_max_bytes? integer cap on all file texts kept for merges and review (oldest dropped first)
---@field history_dir? string where chats are kept, a folder per project (absent: not kept)
---@field history_chat_max_bytes? integer cap on one kept chat's transcript (its oldest records dropped)
---@field history_project_max_bytes? integer cap on one project's kept chats (its oldest chats deleted)
---@field history_project_max_chats? integer most chats kept per project (its oldest deleted)
---@field dispatch? fun(batch: acp.Event[], behind: boolean) Gets every drained batch; `behind`: its drain's budget left events for the next (a backlog).

---@class acp.AgentSpec
---@field name string
---@field cmd string
---@field args? string[]
---@field env? table<string, string>
---@field cwd string
---@field mcp_servers? table[]
---@field caps? { fs_read?: boolean, fs_write?: boolean, terminal?: boolean, plan_v2?: boolean, subagents?: boolean }
---@field line_max? integer the longest message (bytes) the agent may send
---@field timeouts? { initialize?: integer, session_new?: integer, cancel_grace?: integer, authenticate?: integer, idle_close?: integer } ms (`idle_close`: an idle session closed in the agent and resumed by the next prompt; 0 never)
---@field trace_max? integer messages kept in the protocol trace
---@field keep_daemons? string[] executable names of the agent's descendants allowed to outlive it and Neovim
---@field system_prompt? string appended to the agent's instructions in every session (sent only when it advertises `sessionCapabilities.systemPrompt`)
---@field defaults? [string, string|boolean][] set in order right after `session/new`: a config option id (or category), else `mode` / `model` through the legacy requests
---@field policy? acp.Policy
---@field resume? string a session to open instead of a new one: `session/load` when advertised (its history replayed), else `session/resume`; after a kept transcript, `session/resume` first (a load's replay is then not shown)
---@field kept? string a kept chat (`kept_chats`) to show first and continue: its transcript replayed, its review records imported

--- A kept chat as `kept_chats` lists it (its file's first line).
---@class acp.KeptChat
---@field acp_chat integer the file format's version
---@field id string
---@field agent string
---@field cwd string
---@field session_id? string the agent's session, when one was opened
---@field title? string the agent's title, else the first prompt's first line
---@field created integer unix seconds
---@field updated integer unix seconds
---@field dropped integer records dropped to stay under the chat's cap
---@field records integer
---@field bytes integer

---@class acp.Policy
---@field roots? string[]
---@field allow_read_outside? boolean
---@field allow_write_outside? boolean
---@field allow_terminal_outside? boolean
---@field save_unmodified? boolean
---@field shell? string
---@field auto_allow? (string|acp.AutoAllowRule)[]
---@field terminal_confirm? 'unrequested'|'always'|'never'
---@field protected? string[] names no agent write may touch in a path (`*`/`?`)
---@field read_max_bytes? integer whole-file reads above this are refused
---@field terminal_output_max_bytes? integer output kept per terminal without the agent's `outputByteLimit`
---@field terminal_inert_env? string[][] `{ name, value }` pairs a grant disregards (`terminal.inert_env`)

--- A request the user's policy answers "allow once" without asking.
---@class acp.AutoAllowRule
---@field kind string the card's tool kind as first recorded
---@field pattern? string `*`/`?` pattern over the command (else the title); default `*`

--- An ACP content block of a prompt (text, resource, resource_link, image).
---@class acp.ContentBlock
---@field type 'text'|'resource'|'resource_link'|'image'|'audio'|string

---@class acp.AuthMethod
---@field id string
---@field name? string
---@field description? string

---@class acp.ThreadInfo
---@field state acp.TurnState
---@field pid? integer
---@field session_id? string
---@field agent string
---@field kept_id string the chat's kept id (its file under `history_dir`, see `kept_chats`)
---@field agent_capabilities? acp.AgentCapabilities
---@field agent_info? acp.AgentInfo

--- A transcript entry as the core keeps it (`entry` says which kind).
---@class acp.Entry
---@field entry acp.EntryKind|'id_plan' id_plan: a plan by id (kind `plan`)
---@field text? string user, heading, agent, thought, notice
---@field level? acp.NoticeLevel notice
---@field items? { content: string, status: acp.PlanStatus, priority: acp.PlanPriority }[] plan
---@field id? string tool_call (and the fields below)
---@field title? string
---@field kind? acp.ToolKind
---@field status? acp.ToolStatus
---@field locations? table[] { path, line? } pairs
---@field content? acp.ToolContent[]
---@field raw_input? string
---@field raw_output? { text: string, exit_code?: integer, failed: boolean, json: boolean } json: text is a shape not read, as pretty JSON
---@field notes? string[]
---@field client_state? acp.ClientState
---@field message_id? string user, agent, thought: the agent's `messageId` of the message it shows, when it sent one
---@field severity? string agent_notice: `info`, `warning`, `error` or as sent (and its `title`, `description`)
---@field summary? string compaction: the retained summary (and its `id`, `status`: `in_progress`, `completed`, `failed`, `cancelled` or as sent)
---@field error? string compaction
---@field body? { type: 'items'|'markdown', items?: table[], content?: string, path?: string } id_plan
---@field removed? boolean id_plan: `plan_removed` came
---@field session_id? string subagent: its child session
---@field description? string subagent
---@field state? { state: string, stop_reason?: string, error?: string } subagent: `running`, `idle`, `requires_action`, `unknown` (or an agent's own); `error`: the message of an idle state's `stopReason: error`
---@field can_cancel? boolean subagent: the agent offers to cancel its work
---@field tool_call_id? string subagent: the tool call that started it
---@field tool_title? string subagent
---@field lines? { kind: acp.EntryKind, key?: string, text: string }[] subagent: its own transcript (the newest 200 lines)
---@field lines_dropped? integer subagent: lines dropped from the start of `lines`

--- Content of a tool card (snake_case: `old_text`/`new_text`).
---@class acp.ToolContent
---@field type 'text'|'diff'|'terminal'
---@field text? string
---@field path? string
---@field old_text? string nil for a new file
---@field new_text? string
---@field id? string terminal id
---@field tail? string
---@field more_lines? integer
---@field exit? string
---@field known? boolean

--- One changed file of the session (one record per path).
---@class acp.WriteRecord
---@field path string
---@field time number Seconds since the epoch, of the last change.
---@field tool_call_id? string
---@field target 'buffer'|'disk'|'agent' this client wrote the buffer or the disk, or the agent wrote the disk itself
---@field saved boolean
---@field changes integer how many changes
---@field original? string The text before the first change (absent when created or unknown).
---@field created? true this client's own write created the file (only then may review delete it)
---@field original_unknown? true the text before could not be read
---@field accepted? true review accepted its changes ("accept all"); a later change makes it pending again

--- What review compares a changed file with (`review_base`): the text now
--- with every change of the agent's taken back, newest first, keeping the
--- edits made since (so the user's own changes never show as the agent's).
---@class acp.ReviewBase
---@field text? string that text; absent when a change's text is not known (dropped past the cap, or never read)
---@field absent boolean taking the changes back removes the file (the agent created it and nobody changed it since)
---@field created boolean the oldest change not yet accepted created the file
---@field reverted integer regions of the agent's changes taken back
---@field kept integer regions left as they are: edited again since the agent's change
---@field steps integer the agent's changes not yet accepted
---@field accepted boolean

--- A turn's checkpoint (`checkpoints`): the files the agent changed in it.
---@class acp.Checkpoint
---@field id integer the turn's number in this chat (continues after a restart)
---@field user_index integer user messages in the transcript before this turn's
---@field prompt string what the user said (cut)
---@field time number seconds since the epoch
---@field files string[] the files the turn changed
---@field git boolean a snapshot tree of the work tree was taken at its start
---@field undone boolean restored: its changes were taken back
---@field bytes integer the texts it keeps

---@class acp.TerminalText
---@field output string
---@field exit? string

---@class acp.BridgeStats
---@field pushed integer
---@field drains integer
---@field delivered integer
---@field waits integer
---@field sliced integer
---@field timed_wakes integer
---@field queued_bytes integer

--- What the library was built from: the loader compares it with the plugin.
---@class acp.BuildInfo
---@field version string The crate version (must equal `acp.core.VERSION`).
---@field source_stamp string sha256 of the sources (see `acp.core.source_stamp`).

-- The native module ---------------------------------------------------------------------
-- Every function raises a Lua error on bad arguments or an unknown thread.

--- An "always" answer the user gave this session (shown by :AcpPermissions;
--- the agent remembers it, the plugin never answers with it).
---@class acp.AlwaysChoice
---@field kind string tool kind of the card
---@field text string the command (or title) the user read
---@field option acp.PermissionOptionKind

--- A file the agent changed on disk by itself, seen by the buffer sync.
---@class acp.DiskEdit
---@field path string
---@field before? string the text before; absent: the one the buffer and the disk last agreed on (the core keeps it)
---@field after? string the new text (absent: deleted), the buffer's when the sync merged the change into it; nothing is recorded when it equals the text before

---@class acp.Native
---@field init fun(opts: acp.InitOpts)
---@field source_stamp fun(): string
---@field version fun(): string
---@field build_info fun(): acp.BuildInfo
---@field log_path fun(): string?
---@field log fun(level: 'info'|'warn'|'error', message: string) writes a line to the core's log
---@field notice fun(thread: integer, level: 'info'|'warn'|'error', text: string) a notice entry in the transcript
---@field disk_edit fun(thread: integer, edit: acp.DiskEdit) records a change the agent made on disk (for :AcpReview)
---@field accept_changes fun(thread: integer, also: string[]?) review's "accept all": every changed file (and the paths `also`, known from tool cards) is accepted; they stay listed as changed
---@field review_base fun(thread: integer, path: string, now: string?): acp.ReviewBase? what review compares `path` with, from its text `now` (nil: no such file); nil when the chat has no record of it
---@field review_keep fun(thread: integer, path: string, before: string, after: string) review's "keep": the agent's changes of `path` so far become one, from `before` (the review's left text after the keep) to `after` (the text now)
---@field review_export fun(thread: integer): string the change records with their chains and decisions as JSON (texts over 1 MiB, or past 8 MiB in all, are left out and come back unknown)
---@field review_import fun(thread: integer, json: string): integer restores an export into this chat (each file replaces its record); how many files
---@field checkpoints fun(thread: integer): acp.Checkpoint[] the chat's checkpoints, oldest first
---@field checkpoint_paths fun(thread: integer, turn: integer): string[]? the files a restore to before `turn` puts back (nil: no such checkpoint)
---@field checkpoint_base fun(thread: integer, turn: integer, path: string, now: string?): acp.ReviewBase? `path` from its text `now` with the changes of `turn` and later taken back (edits since kept); nil when those turns did not change it
---@field checkpoint_undone fun(thread: integer, turn: integer): integer[] marks `turn` and later ones undone; their ids
---@field open_thread fun(spec: acp.AgentSpec): integer
---@field prompt fun(thread: integer, prompt: string|acp.ContentBlock[], opts: { queued_by_agent?: boolean }?)
---@field request fun(thread: integer, method: string, params: table?, reply: integer) a view request; answered by a `reply` event
---@field reconnect fun(thread: integer) opens the session again (after a terminal sign-in)
---@field branch fun(thread: integer, opts: { fork?: boolean, message_id?: string, note: string }, reply: integer) edit and resend: after the notice `note`, the chat goes on in a fork of its session (`session/fork`, at `message_id`: the last message kept) or, without `fork`, in a new session; a `reply` event answers `{ session_id }` or the error
---@field answer_elicitation fun(request: integer, response: acp.ElicitationResponse)
---@field authenticate fun(thread: integer, method_id: string)
---@field auth_methods fun(thread: integer): acp.AuthMethod[]
---@field set_mode fun(thread: integer, mode_id: string)
---@field cancel fun(thread: integer): boolean
---@field cancel_subagent fun(thread: integer, session_id: string): boolean, string? false and why when it cannot be cancelled
---@field answer_permission fun(thread: integer, request: integer, option_id: string?)
---@field close_thread fun(thread: integer)
---@field markdown fun(thread: integer, before: integer?): string the transcript as markdown (only the entries before index `before`, when given)
---@field trace_lines fun(thread: integer, width: integer?): string[] the protocol trace of the chat's agent, one line per message
---@field trace_save fun(thread: integer, path: string): integer writes the trace as JSONL (secrets redacted); the message count
---@field thread_info fun(thread: integer): acp.ThreadInfo
---@field list_files fun(root: string, max: integer?, request: integer)
---@field match_files fun(root: string, query: string, limit: integer?): string[]?
---@field agent_pids fun(): integer[]
---@field entry fun(thread: integer, index: integer): acp.Entry?
---@field decisions fun(thread: integer): acp.AlwaysChoice[]
---@field forget_decisions fun(thread: integer)
---@field call_part fun(call: integer, text: string, size: integer?) size: the whole text's bytes (a hint, on the first part)
---@field call_done fun(call: integer, value: acp.Reply?)
---@field call_fail fun(call: integer, message: string)
---@field terminal_output fun(thread: integer, terminal: string, data: string)
---@field terminal_exit fun(thread: integer, terminal: string, code: integer)
---@field terminal_text fun(thread: integer, terminal: string): acp.TerminalText?
---@field watch_terminal fun(thread: integer, id: string, on: boolean): acp.TerminalText? a view buffer follows terminal `id`: its output so far, then `terminal_output` events
---@field writes fun(thread: integer): acp.WriteRecord[]
---@field roots fun(thread: integer): string[]
---@field decode fun(text: string, format: acp.TextFormat?): string[], boolean a file's text as the lines of a buffer with `format`, and whether it ended with a line break
---@field encode fun(lines: string[]|string, format: acp.TextFormat?): string what a `:write` of a buffer holding `lines` puts in its file
---@field hunks fun(old: string[]|string, new: string[]|string): acp.Hunk[] the minimal edits from lines `old` to lines `new`
---@field file_hunks fun(lines: string[]|string, text: string, format: acp.TextFormat?): acp.Hunk[], boolean the edits that make a buffer of `lines` hold file text `text`, and its 'eol' then
---@field agreed_set fun(path: string, text: string?) the text the buffer of `path` and its file agree on now (nil: not known); kept under `fs.kept_text_max_bytes`
---@field agreed_get fun(path: string): string? that text, or nil (none, or dropped past the cap)
---@field agreed_forget fun(path: string)
---@field merge_disk fun(path: string, lines: string[]|string, text: string, format: acp.TextFormat?): acp.DiskMerge, (acp.Hunk[]|integer[])? a disk change merged into the buffer's unsaved `lines` from the agreed text: the hunks when "merged", the 1-based { first, last } lines when "conflict"
---@field stats fun(): acp.BridgeStats
---@field events_wait fun(): boolean events wait for the next drain (the last one's budget left some, or more came since)
---@field keep_text fun(thread: integer, label: string, text: string): integer? keeps a file text under the one cap of kept texts (`fs.kept_text_max_bytes`); its id, or nil when not kept
---@field kept_text fun(id: integer): string? the text kept as `id`, or nil once it was dropped (oldest first past the cap) or released
---@field release_text fun(id: integer)
---@field kept_bytes fun(): integer bytes of all kept texts
---@field kept_chats fun(root: string): { chats: acp.KeptChat[], problems: string[] } a project's kept chats, newest first, and the files that could not be read
---@field kept_delete fun(root: string, id: string) deletes a kept chat's file
---@field shutdown fun()
---@field media_root fun(): string the folder the agent's images and audio are saved in (`$TMPDIR/acp.nvim-<pid>-<random>/media`, made private by this Neovim)
---@field _panic fun() Test hook: a panic that must surface as a Lua error.
