// create (POST), update (PUT), patch (PATCH), delete and deletecollection (DELETE).
import * as status from '../../api/status.js';
import type { DeleteOptions } from '../../registry/registry.js';
import type { KubeObject } from '../../model/object.js';
import { decodeApplyPatch, decodeObjectBody, decodePatch, patchKind, writeOptions } from '../body.js';
import { mediaType, negotiateAs } from '../negotiation.js';
import { send, sendObject } from '../respond.js';
// Between decoding a (possibly 3 MiB) body and handling it, other requests get the event loop.
import { breathe } from '../../registry/apply/work.js';
import { partialObjectMetadata } from '../representation.js';
import { listItems } from './list-items.js';
import { parseListOptions } from '../list-options.js';
import { type HandlerContext, requestContext } from './context.js';
import type { WriteVerb } from '../write-observer.js';

function respondObject(h: HandlerContext, code: number, obj: KubeObject, warnings: string[] = []): Promise<void> {
  const { output, metaVersion } = negotiateAs(h.req.headers.accept, { table: false, partial: true, partialList: false });
  return sendObject(h.reply, code, output === 'partial' ? partialObjectMetadata(obj, metaVersion) : obj, output, warnings);
}

/**
 * Tells the write observer (the sandbox's attribution facts) of a stored write, before the client is
 * answered, so the fact exists by the time the client sees its write acknowledged. The write itself
 * is already stored: a failure to record is logged (the change will be committed by the unresolved
 * author) and never turned into an error the client would retry.
 */
async function observe(h: HandlerContext, verb: WriteVerb, dryRun: boolean, object: KubeObject | undefined, removed?: KubeObject[]): Promise<void> {
  if (!h.observeWrite || dryRun || h.info.subresource) return;
  try {
    await h.observeWrite({
      cluster: h.info.cluster,
      verb,
      group: h.registry.def.group,
      resource: h.registry.def.plural,
      namespace: h.info.namespace,
      object,
      removed,
      user: h.user,
      impersonator: h.impersonator,
    });
  } catch (e) {
    h.state.log.warn('could not record the attribution fact of a sandbox write; its change will be committed by the unresolved author', {
      verb,
      resource: h.registry.def.plural,
      namespace: h.info.namespace,
      name: object?.metadata.name ?? '',
      error: (e as Error).message,
    });
  }
}

function kindOf(h: HandlerContext): { kind: string; version: string } {
  return { kind: h.registry.def.kind, version: h.registry.apiVersion.split('/').pop()! };
}

export async function handleCreate(h: HandlerContext): Promise<void> {
  if (h.info.subresource) throw status.methodNotAllowed();
  const opts = writeOptions(h.query, 'create', h.req.headers['user-agent']);
  const body = await decodeObjectBody(h.req.headers['content-type'], h.req.body, opts.fieldValidation, kindOf(h), h.registry.def.protobuf);
  await breathe();
  const { object, warnings } = await h.registry.create(requestContext(h), h.info.namespace, body.value, opts);
  await observe(h, 'create', opts.dryRun, object);
  await respondObject(h, 201, object, [...body.warnings, ...warnings]);
}

export async function handleUpdate(h: HandlerContext): Promise<void> {
  const opts = writeOptions(h.query, 'update', h.req.headers['user-agent']);
  const body = await decodeObjectBody(h.req.headers['content-type'], h.req.body, opts.fieldValidation, kindOf(h), h.registry.def.protobuf);
  await breathe();
  const { object, warnings } = await h.registry.update(requestContext(h), h.info.namespace, h.info.name, body.value, opts, h.info.subresource);
  await observe(h, 'update', opts.dryRun, object);
  await respondObject(h, 200, object, [...body.warnings, ...warnings]);
}

export async function handlePatch(h: HandlerContext): Promise<void> {
  // The content type is checked before anything else, as kube-apiserver does.
  const kind = patchKind(h.req.headers['content-type']);
  // Strategic merge patch exists for built-in kinds only (the sandbox's); our own group answers 415 as CRDs do.
  const mergeKeys = h.registry.def.strategicMerge;
  if (kind === 'strategic' && !mergeKeys) throw status.unsupportedPatchType();
  const opts = writeOptions(h.query, 'patch', h.req.headers['user-agent'], kind === 'apply');
  if (kind === 'apply') {
    const config = await decodeApplyPatch(h.req.body, opts.fieldValidation);
    await breathe();
    const { object, warnings, created } = await h.registry.apply(requestContext(h), h.info.namespace, h.info.name, config.value, opts, h.info.subresource);
    await observe(h, 'patch', opts.dryRun, object);
    await respondObject(h, created ? 201 : 200, object, [...config.warnings, ...warnings]);
    return;
  }
  const patch = await decodePatch(kind, h.req.body, opts.fieldValidation, h.state.maxRequestBytes, mergeKeys);
  await breathe();
  const { object, warnings } = await h.registry.patch(requestContext(h), h.info.namespace, h.info.name, patch.apply, opts, h.info.subresource);
  await observe(h, 'patch', opts.dryRun, object);
  await respondObject(h, 200, object, [...patch.warnings, ...warnings]);
}

/** DeleteOptions from the body (kubectl) and/or the query string. */
async function deleteOptions(h: HandlerContext): Promise<DeleteOptions> {
  let body: Record<string, any> = {};
  const raw = h.req.body;
  if (Buffer.isBuffer(raw) && raw.length > 0) {
    const mt = mediaType(h.req.headers['content-type']);
    if (mt !== '' && mt !== 'application/json' && mt !== 'application/yaml') {
      throw status.unsupportedMediaType('the body of the request was in an unknown format - accepted media types include: application/json, application/yaml');
    }
    const decoded = (await decodeObjectBody(mt === '' ? 'application/json' : mt, raw, 'Ignore')).value;
    if (decoded === null || typeof decoded !== 'object' || Array.isArray(decoded)) throw status.badRequest('DeleteOptions must be a JSON object');
    body = decoded as Record<string, any>;
  }
  const dryRun: unknown[] = [...(Array.isArray(body.dryRun) ? body.dryRun : []), ...h.query.getAll('dryRun')];
  for (const d of dryRun) {
    if (d !== 'All') {
      throw status.invalidOptions('DeleteOptions', [{ type: 'FieldValueNotSupported', field: 'dryRun', value: d, detail: 'supported values: "All"' }]);
    }
  }
  const policy = body.propagationPolicy ?? h.query.get('propagationPolicy');
  if (policy != null && !['Background', 'Foreground', 'Orphan'].includes(policy)) {
    throw status.invalidOptions('DeleteOptions', [
      { type: 'FieldValueNotSupported', field: 'propagationPolicy', value: policy, detail: 'supported values: "Background", "Foreground", "Orphan"' },
    ]);
  }
  const pre = body.preconditions;
  return {
    dryRun: dryRun.length > 0,
    preconditions: pre && typeof pre === 'object' ? { uid: pre.uid ?? undefined, resourceVersion: pre.resourceVersion ?? undefined } : undefined,
  };
}

export async function handleDelete(h: HandlerContext): Promise<void> {
  if (h.info.subresource) throw status.methodNotAllowed();
  const opts = await deleteOptions(h);
  const obj = await h.registry.delete(requestContext(h), h.info.namespace, h.info.name, opts);
  await observe(h, 'delete', opts.dryRun, obj);
  await respondObject(h, 200, obj);
}

export async function handleDeleteCollection(h: HandlerContext): Promise<void> {
  const opts = await deleteOptions(h);
  const list = parseListOptions(h.query, h.registry.def);
  if (list.watch) throw status.badRequest('watch is not supported on deletecollection');
  const cluster = h.info.cluster;
  const { items, listRV } = await listItems(h, { ...list, continueToken: undefined }, cluster);
  const deleted: KubeObject[] = [];
  for (const item of items) {
    try {
      deleted.push(await h.registry.delete(requestContext(h), item.metadata.namespace ?? '', item.metadata.name!, opts));
    } catch (e) {
      // An object removed concurrently is simply no longer ours to delete.
      if (!(e instanceof status.StatusError && e.status.reason === 'NotFound')) throw e;
    }
  }
  await observe(h, 'deletecollection', opts.dryRun, undefined, deleted);
  send(h.reply, 200, {
    apiVersion: h.registry.apiVersion,
    kind: h.registry.def.listKind,
    metadata: { resourceVersion: String(listRV) },
    items: deleted,
  });
}
