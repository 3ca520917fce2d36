// An agent framework that takes an MCP client, connected in-process: the Vercel AI SDK's MCP client (@ai-sdk/mcp)
// over an in-memory transport to `createBlackboardServer`, the same server `mcp-blackboard` serves. No subprocess.
// The tools it gets are AI SDK tools: pass them to generateText({ model, tools }). Here they are called directly
// (no model needed), and the write is read back through the library, over the same store connection.
// Run after `npm install` and `npm install @ai-sdk/mcp`: node examples/ai-sdk.mjs
import { createMCPClient } from '@ai-sdk/mcp';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createBlackboardServer, openBlackboard, openStore } from 'mcp-blackboard';

const store = await openStore('memory://');
const server = await createBlackboardServer({ store, agent: 'assistant', tools: ['kv', 'plan', 'finalizer'] });
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const mcp = await createMCPClient({ transport: clientSide });
try {
  const tools = await mcp.tools();
  console.log(`ai-sdk: ${Object.keys(tools).length} tools, e.g. ${Object.keys(tools).slice(0, 3).join(', ')}`);
  // What the model's tool call would run:
  const result = await tools.state_set.execute(
    { key: 'greeting', value: 'hello from the AI SDK', ifVersion: 0 },
    { toolCallId: 'call-1', messages: [] },
  );
  console.log(`ai-sdk: state_set -> ${JSON.stringify(result.structuredContent)}`);
  const refused = await tools.state_set.execute({ key: 'greeting', value: 'again', ifVersion: 0 }, { toolCallId: 'call-2', messages: [] });
  console.log(`ai-sdk: second state_set -> ${JSON.parse(refused.content[0].text).error.code}`);

  const bb = await openBlackboard({ store, agent: 'orchestrator' });
  const { value, updatedBy } = await bb.kv.get({ key: 'greeting' });
  console.log(`library: greeting = "${value}" (by ${updatedBy})`);
  await bb.close();
} finally {
  await mcp.close();
  await server.close();
  await store.close();
}
