// Writing responses: one place that serializes bodies, sets content types and warning headers.
import type { FastifyReply } from 'fastify';
import { stringify as toYAML } from 'yaml';
import type { Output } from './negotiation.js';
import type { Status } from '../api/status.js';

export function send(reply: FastifyReply, code: number, body: unknown, output: Output = 'json', warnings: string[] = []): FastifyReply {
  if (warnings.length) {
    reply.header(
      'warning',
      warnings.map((w) => `299 - ${JSON.stringify(w)}`),
    );
  }
  if (output === 'yaml') return reply.code(code).type('application/yaml').send(toYAML(body));
  return reply.code(code).type('application/json').send(JSON.stringify(body));
}

export function sendStatus(reply: FastifyReply, status: Status, headers: Record<string, string> = {}): FastifyReply {
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  return reply.code(status.code).type('application/json').send(JSON.stringify(status));
}

export function sendRaw(reply: FastifyReply, code: number, contentType: string, body: Buffer | string, headers: Record<string, string> = {}): FastifyReply {
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  return reply.code(code).type(contentType).send(body);
}
