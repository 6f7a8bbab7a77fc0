// Test receivers for alert notices: an HTTP endpoint that records every POST (a generic, Teams or Slack webhook)
// and a tiny SMTP server that records every mail (just enough of RFC 5321 for nodemailer: EHLO without
// STARTTLS, MAIL, RCPT, DATA, QUIT). Both listen on 127.0.0.1 on an ephemeral port (the SMTP receiver on another
// address of this machine when asked: a host that is not loopback, to which mail must go encrypted).
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface WebhookReceiver {
  url: string;
  received: Array<{ path: string; headers: Record<string, string | string[] | undefined>; body: unknown }>;
  /** Answer with this status (default 200). */
  status: number;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: WebhookReceiver['received'] = [];
  const r = { received, status: 200 } as WebhookReceiver;
  const server: Server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown = Buffer.concat(chunks).toString('utf8');
      try {
        body = JSON.parse(body as string);
      } catch {
        // kept as text
      }
      received.push({ path: req.url ?? '/', headers: req.headers, body });
      res.statusCode = r.status;
      res.end('ok');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  r.close = () => new Promise<void>((ok) => server.close(() => ok()));
  return r;
}

export interface SmtpReceiver {
  port: number;
  mails: Array<{ from: string; to: string[]; data: string; auth: string | null }>;
  /** The verb of every command received (`EHLO`, `STARTTLS`, `AUTH`, ...), never its arguments. */
  commands: string[];
  close(): Promise<void>;
}

export async function startSmtpReceiver(o: { host?: string } = {}): Promise<SmtpReceiver> {
  const mails: SmtpReceiver['mails'] = [];
  const commands: string[] = [];
  const server: TcpServer = createTcpServer((socket) => {
    let buffer = '';
    let inData = false;
    let current = { from: '', to: [] as string[], data: '', auth: null as string | null };
    const reply = (line: string) => socket.write(`${line}\r\n`);
    reply('220 test-smtp ready');
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (;;) {
        const i = buffer.indexOf('\r\n');
        if (i < 0) break;
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        if (inData) {
          if (line === '.') {
            inData = false;
            mails.push(current);
            current = { from: '', to: [], data: '', auth: current.auth };
            reply('250 queued');
          } else current.data += `${line.startsWith('..') ? line.slice(1) : line}\n`;
          continue;
        }
        commands.push(line.split(' ')[0]!.toUpperCase());
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') socket.write('250-test-smtp\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n');
        else if (verb === 'HELO') reply('250 test-smtp');
        else if (verb === 'AUTH') {
          current.auth = line.slice(5);
          reply('235 ok');
        } else if (verb === 'MAIL') {
          current.from = line.replace(/^MAIL FROM:\s*/i, '').replace(/[<>]/g, '').split(' ')[0] ?? '';
          reply('250 ok');
        } else if (verb === 'RCPT') {
          current.to.push(line.replace(/^RCPT TO:\s*/i, '').replace(/[<>]/g, '').split(' ')[0] ?? '');
          reply('250 ok');
        } else if (verb === 'DATA') {
          inData = true;
          reply('354 go ahead');
        } else if (verb === 'QUIT') {
          reply('221 bye');
          socket.end();
        } else if (verb === 'RSET' || verb === 'NOOP') reply('250 ok');
        else reply('502 not implemented');
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((ok) => server.listen(0, o.host ?? '127.0.0.1', ok));
  return {
    port: (server.address() as AddressInfo).port,
    mails,
    commands,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}
