import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PigeonUpdate } from './pigeon-plugin.js';

export interface PigeonMessage {
  botToken: string;
  chatId: string;
  text: string;
  rows: { text: string; url: string }[][];
}

/** The fake bot API of the third messenger, on loopback: bots by token, their updates, what they sent. */
export class PigeonApi {
  readonly sent: PigeonMessage[] = [];
  private readonly bots = new Map<string, { id: string; username: string; updates: PigeonUpdate[] }>();
  private readonly blocked = new Set<string>();
  private nextUpdate = 1;
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        void this.answer(req.method ?? 'GET', new URL(req.url ?? '/', 'http://x'), body).then(
          ([status, answer]) =>
            res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer)),
        );
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  bot(token: string, username: string): void {
    this.bots.set(token, { id: String(1000 + this.bots.size), username, updates: [] });
  }

  /** A person starts the bot and shares their contact (two updates). */
  startAndShare(token: string, chatId: string, phone: string): void {
    const updates = this.bots.get(token)!.updates;
    updates.push({ id: this.nextUpdate++, kind: 'started', chat_id: chatId, user_id: chatId });
    updates.push({ id: this.nextUpdate++, kind: 'contact', chat_id: chatId, user_id: chatId, phone });
  }

  block(chatId: string): void {
    this.blocked.add(chatId);
  }

  private async answer(method: string, url: URL, body: string): Promise<[number, unknown]> {
    const [, botPath, call] = url.pathname.split('/');
    const token = decodeURIComponent(botPath?.replace(/^bot/, '') ?? '');
    const bot = this.bots.get(token);
    if (!bot) return [401, { error: 'unknown bot token' }];
    if (method === 'GET' && call === 'me') return [200, { id: bot.id, username: bot.username }];
    if (method === 'GET' && call === 'updates') {
      const after = Number(url.searchParams.get('after') ?? 0);
      // A short long poll: nothing new waits half a second, so the sender's poll loop does not spin.
      if (!bot.updates.some((u) => u.id > after)) await sleep(500);
      return [200, { updates: bot.updates.filter((u) => u.id > after) }];
    }
    if (method === 'POST' && call === 'messages') {
      const message = JSON.parse(body) as { chat_id: string; text: string; rows: PigeonMessage['rows'] };
      if (this.blocked.has(message.chat_id)) return [403, { error: 'the person blocked the bot' }];
      this.sent.push({ botToken: token, chatId: message.chat_id, text: message.text, rows: message.rows });
      return [200, { message_id: `p${this.sent.length}` }];
    }
    return [404, { error: `no ${method} ${url.pathname}` }];
  }
}
