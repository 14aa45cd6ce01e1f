// Namespaces over HTTP: which namespace a request is for (the Atom management plane answers each namespace's own
// entities), and `/api/namespaces` to list, create and delete namespaces at run time. Creating and deleting need the
// Manage right of the default namespace, as creating a namespace in Azure needs rights above any one namespace.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpPort } from '../broker/ports.js';
import type { SharedAccessPolicy } from '../config/types.js';
import { authorize } from './admin-api.js';
import { HttpError, readJsonObject, sendJson } from './http-util.js';

/** One namespace as the HTTP layer sees it. */
export interface HttpNamespace {
  name: string;
  broker: HttpPort;
  policies: SharedAccessPolicy[];
}

/** The namespaces of the broker, given by the composition root. */
export interface NamespaceHooks {
  /**
   * The namespace a request is for: the one the Host header's first label names, else the one the SAS token's key
   * name selects (as on AMQP); null = the default namespace.
   */
  forRequest(host: string | undefined, authorization: string | undefined): Promise<HttpNamespace | null>;
  /** Every namespace, with a connection string for each. */
  list(): { name: string; connectionString: string }[];
  /** Creates one from a Config.json `Namespaces[]` item; resolves with its connection string. */
  create(item: Record<string, unknown>): Promise<{ name: string; connectionString: string }>;
  /** Deletes one (its connections closed, its data removed). */
  delete(name: string): Promise<void>;
}

/** True for the paths (after `/api`) this module answers. */
export function isNamespaceRoute(parts: string[]): boolean {
  return parts[0] === 'namespaces' && parts.length <= 2;
}

/** `GET /api/namespaces`, `PUT /api/namespaces/{name}` (body: Queues, Topics, SharedAccessPolicies), `DELETE …/{name}`. */
export async function handleNamespaces(
  req: IncomingMessage,
  res: ServerResponse,
  parts: string[],
  policies: SharedAccessPolicy[],
  hooks: NamespaceHooks | undefined,
): Promise<void> {
  if (!hooks) throw new HttpError(404, 'NotFound', 'This broker serves one namespace.');
  authorize(req, policies, null);
  const name = parts[1];
  if (name === undefined) {
    if (req.method !== 'GET') throw new HttpError(405, 'MethodNotAllowed', '/api/namespaces takes GET.');
    return sendJson(res, 200, hooks.list());
  }
  if (req.method === 'PUT') {
    const body = await readJsonObject(req);
    if (body.Name !== undefined && String(body.Name) !== name) {
      throw new HttpError(400, 'BadRequest', `The body's Name '${String(body.Name)}' differs from the path's '${name}'.`);
    }
    return sendJson(res, 201, await hooks.create({ ...body, Name: name }));
  }
  if (req.method === 'DELETE') {
    await hooks.delete(name);
    return sendJson(res, 200, { deleted: name });
  }
  throw new HttpError(405, 'MethodNotAllowed', `/api/namespaces/${name} takes PUT or DELETE.`);
}
