// Drives the generated OpenCode plugin with a fake `client` (the shapes of @opencode-ai/sdk v1:
// session.get/messages/prompt with {path:{id}}, events {type, properties}); prints what the
// plugin did as one JSON object. Usage: node drive_plugin.mjs PLUGIN.mjs PROJECT_DIR
const [pluginPath, directory] = process.argv.slice(2)
const { StopRule } = await import(pluginPath)

const prompts = []
const parents = { main: null, child: "main" }
const messages = {
  main: [
    { info: { role: "user" }, parts: [{ type: "text", text: "Migrate staging" }] },
    { info: { role: "assistant" }, parts: [{ type: "text", text: "Staging is migrated." }] },
  ],
  child: [{ info: { role: "assistant" }, parts: [{ type: "text", text: "Subtask done." }] }],
}
const replies = []
const client = {
  _client: {
    // the v2 permission route, through the v1 client's own request function
    post: async (req) => {
      replies.push({ url: req.url, path: req.path, body: req.body })
      return { data: true }
    },
  },
  session: {
    get: async ({ path }) => ({ data: { id: path.id, parentID: parents[path.id] ?? null } }),
    messages: async ({ path }) => ({ data: messages[path.id] ?? [] }),
    prompt: async (args) => {
      prompts.push({ id: args.path.id, text: args.body.parts[0].text })
      return { data: {} }
    },
  },
}
const hooks = await StopRule({ client, directory, worktree: directory })
const out = {}
await hooks.event({ event: { type: "session.created", properties: { info: { id: "main" } } } })
await hooks.event({ event: { type: "session.created", properties: { info: { id: "child", parentID: "main" } } } })
const system = { system: ["base prompt"] }
await hooks["experimental.chat.system.transform"]({ sessionID: "main" }, system)
out.system = system.system
await hooks.event({
  event: {
    type: "todo.updated",
    properties: { sessionID: "main", todos: [
      { id: "1", content: "Migrate staging", status: "completed", priority: "high" },
      { id: "2", content: "Run the production migration", status: "pending", priority: "high" },
    ] },
  },
})
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "child" } } })
out.after_child_idle = prompts.length
for (let i = 0; i < 4; i++) {
  // OpenCode 1.18.16+: session.status {type: "idle"} (the child's session.idle above is the older form)
  await hooks.event({ event: { type: "session.status", properties: { sessionID: "main", status: { type: "idle" } } } })
  // each continuation arrives as a user message of the plugin's own
  if (prompts.length > i) await hooks["chat.message"]({ sessionID: "main" }, {})
}
out.prompts = prompts
// once session.status is seen, the deprecated session.idle of the same idle is not a second stop
const before = prompts.length
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "main" } } })
out.stray_idle_prompts = prompts.length - before
const args = { question: "q" }
await hooks["tool.execute.before"]({ tool: "stoprule_blocker", sessionID: "main", callID: "c1" }, { args })
out.tool_args = args
const guard = {}
for (const [name, command] of [["refused", "stoprule blockers off"], ["ordinary", "ls -la"]]) {
  try {
    await hooks["tool.execute.before"]({ tool: "bash", sessionID: "main", callID: name }, { args: { command } })
    guard[name] = null
  } catch (err) {
    guard[name] = String(err.message)
  }
}
out.guard = guard
const perm = { status: "ask" }
await hooks["permission.ask"]({ id: "p1", type: "bash", pattern: "rm -rf build", sessionID: "main", title: "rm" }, perm)
out.permission = perm.status
// OpenCode 1.18: the request to the user is the permission.asked event; rejected with the triage message
await hooks.event({
  event: { type: "permission.asked", properties: { id: "per_1", sessionID: "main", permission: "bash", patterns: ["rm -rf build"] } },
})
out.permission_replies = replies
// the user's /blockers: registered through the config hook, answered before the model sees it
const config = { command: { review: { template: "x" } } }
await hooks.config(config)
out.commands = Object.keys(config.command).sort()
const typed = async () => {
  const parts = [{ type: "text", text: "the command's template" }]
  await hooks["command.execute.before"]({ command: "blockers", sessionID: "main", arguments: "off" }, { parts })
  return parts.map((p) => p.text).join("|")
}
out.blockers_while_a_tool_runs = await typed() // stoprule_blocker and ls are still running
await hooks["tool.execute.after"]({ tool: "stoprule_blocker", sessionID: "main", callID: "c1" }, {})
await hooks["tool.execute.after"]({ tool: "bash", sessionID: "main", callID: "ordinary" }, {})
out.blockers_typed = await typed()
console.log(JSON.stringify(out))
