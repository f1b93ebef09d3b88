// A host nobody here wrote: the official TypeScript SDK v2 client (@modelcontextprotocol/client,
// pinned in package.json), for tests/serve/test_serve_ts_host.py. It connects to a server over
// streamable HTTP or over stdio in the era it is told, lists the tools, the prompts and the
// resources, gets a prompt, reads a resource, calls a tool, and prints what it got as ONE JSON line
// on stdout; then it closes and exits 0 (on an error: the error on stderr, exit 1).
//
//   node tests/servers/ts_host.mjs --era legacy|2026-07-28 (--http URL [--token T] | --stdio -- COMMAND [ARGS...])
//        [--prompt NAME [--prompt-args JSON]] [--read URI] [--call NAME [--call-args JSON]] [--trace]
//
// --era legacy: the 2025 `initialize` handshake; any other value pins that revision (server/discover).
// --trace: every JSON-RPC message the client sends (->) and receives (<-), one a line on stderr.
import { parseArgs } from "node:util";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const { values: options, positionals } = parseArgs({
  options: {
    era: { type: "string", default: "legacy" },
    http: { type: "string" },
    token: { type: "string" },
    stdio: { type: "boolean", default: false },
    prompt: { type: "string" },
    "prompt-args": { type: "string", default: "{}" },
    read: { type: "string" },
    call: { type: "string" },
    "call-args": { type: "string", default: "{}" },
    trace: { type: "boolean", default: false },
  },
  allowPositionals: true,
});

function transportOf() {
  if (options.http !== undefined && !options.stdio) {
    const headers = options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` };
    return new StreamableHTTPClientTransport(new URL(options.http), { requestInit: { headers } });
  }
  if (options.stdio && options.http === undefined && positionals.length > 0) {
    const [command, ...args] = positionals;
    return new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
  }
  throw new Error("give either --http URL or --stdio -- COMMAND [ARGS...]");
}

/** Log each message through `transport` on stderr (the transport stays the SDK's own object). */
function trace(transport) {
  const send = transport.send.bind(transport);
  transport.send = (message, sendOptions) => {
    console.error("->", JSON.stringify(message));
    return send(message, sendOptions);
  };
  let handler = transport.onmessage;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler,
    set: (received) => {
      handler =
        received &&
        ((message, extra) => {
          console.error("<-", JSON.stringify(message));
          received(message, extra);
        });
    },
  });
}

async function main() {
  const mode = options.era === "legacy" ? "legacy" : { pin: options.era };
  const client = new Client({ name: "ts-host", version: "1.0.0" }, { versionNegotiation: { mode } });
  const transport = transportOf();
  if (options.trace) {
    trace(transport);
  }
  try {
    await client.connect(transport);
    const got = { protocolVersion: client.getNegotiatedProtocolVersion() ?? null };
    got.tools = (await client.listTools()).tools.map((tool) => tool.name);
    got.prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
    if (options.prompt !== undefined) {
      const prompt = { name: options.prompt, arguments: JSON.parse(options["prompt-args"]) };
      got.prompt = (await client.getPrompt(prompt)).messages;
    }
    got.resources = (await client.listResources()).resources.map((resource) => resource.uri);
    if (options.read !== undefined) {
      got.read = (await client.readResource({ uri: options.read })).contents;
    }
    if (options.call !== undefined) {
      const call = { name: options.call, arguments: JSON.parse(options["call-args"]) };
      got.call = (await client.callTool(call)).content;
    }
    await new Promise((done) => process.stdout.write(`${JSON.stringify(got)}\n`, done));
  } finally {
    await client.close().catch((error) => console.error("closing:", error?.stack ?? String(error)));
  }
}

try {
  await main();
  process.exit(0);
} catch (error) {
  console.error(error?.stack ?? String(error));
  process.exit(1);
}
