// Starts `once lsp` for once.toml files and stops it with the extension.
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration("once");
  const command = config.get<string>("server.path", "once");
  const extraArgs = config.get<string[]>("server.extraArgs", []);
  const serverOptions: ServerOptions = {
    command,
    args: [...extraArgs, "lsp"],
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", pattern: "**/once.toml" },
      { scheme: "untitled", language: "once-toml" },
      // Annotated scripts: the server answers only for files with `# once` directives.
      { scheme: "file", language: "shellscript" },
      { scheme: "file", language: "python" },
      { scheme: "file", language: "javascript" },
    ],
    synchronize: {
      fileEvents: [
        vscode.workspace.createFileSystemWatcher("**/once.toml"),
        vscode.workspace.createFileSystemWatcher("**/*.star"),
      ],
    },
  };
  client = new LanguageClient("once", "once", serverOptions, clientOptions);
  context.subscriptions.push(
    vscode.commands.registerCommand("once.restartServer", async () => {
      await client?.restart();
    }),
  );
  await client.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
