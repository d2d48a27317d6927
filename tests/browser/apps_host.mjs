// The host side of an MCP Apps conversation, for the merge view's browser
// test: the official SDK's AppBridge, bundled by esbuild for the page. It
// renders a view's HTML in a sandboxed iframe, answers its handshake, and
// sends it an edit's arguments and result; the view's tool calls go to
// `window.hostCallTool` (the test's bridge to Cairn, where it may refuse).
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

window.startHost = async (html, toolInput, toolResult) => {
  const frame = document.createElement('iframe');
  frame.title = 'merge view';
  frame.sandbox = 'allow-scripts';
  frame.style.cssText = 'width: 960px; height: 760px; border: 1px solid #999';
  document.body.append(frame);
  const bridge = new AppBridge(null, { name: 'cairn-test-host', version: '1.0.0' }, { serverTools: {} });
  bridge.oncalltool = async (params) => {
    const answer = JSON.parse(await window.hostCallTool(JSON.stringify(params)));
    if (answer.refused) throw new Error(answer.refused);
    return answer;
  };
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  // Listening before the view's script runs: its handshake is its first message.
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html;
  await initialized;
  await bridge.sendToolInput({ arguments: toolInput });
  await bridge.sendToolResult(toolResult);
  window.appBridge = bridge;
  return bridge.getAppVersion();
};
