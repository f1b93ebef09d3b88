// A TypeScript-SDK host (@modelcontextprotocol/sdk, pinned in package.json) that declares the Skills
// extension (SEP-2640), for tests/serve/test_serve_skills.py: it starts the server command it is given
// over stdio, opens a toolbox (`open_toolbox`), lists the skills (`skills/list`), reads the first file
// of the first skill as a resource, and prints what it got as one JSON line.
//
//   node tests/servers/skills_host.mjs TOOLBOX COMMAND [ARGS...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { z } from "zod";

const [toolbox, command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client(
  { name: "skills-host", version: "1.0.0" },
  { capabilities: { extensions: { "io.modelcontextprotocol/skills": {} } } },
);
await client.connect(transport);
await client.callTool({ name: "open_toolbox", arguments: { toolbox } });
const listing = await client.request(
  { method: "skills/list", params: {} },
  z.object({ skills: z.array(z.object({ uri: z.string() }).passthrough()) }).passthrough(),
);
const first = listing.skills[0];
const file = Array.isArray(first?.resources) ? first.resources[0] : undefined;
const read = file ? await client.readResource({ uri: file.uri }) : undefined;
console.log(JSON.stringify({ protocol: transport.protocolVersion ?? null, listing, read }));
await client.close();
