// The acceptance gate's fixture repository: folders the writer accepts, and one folder for each
// reason it refuses. Built with the git CLI into a bare repository (one commit on main), so the
// library, the CLI, the served RepositoryScan and the writer all read the same commit.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir(), GIT_TERMINAL_PROMPT: '0' };

export const cm = (name: string, ns: string, value = 'v') => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${ns}\ndata:\n  key: ${value}\n`;

export const FIXTURE: Record<string, string> = {
  'README.md': '# platform config\n',
  // Acceptable: the writer's own layout, documentation, a kustomization beside the objects.
  'tenants/a/team-a/configmaps/app.yaml': cm('app', 'team-a'),
  'tenants/a/team-a/configmaps/db.yaml': cm('db', 'team-a'),
  'tenants/a/README.md': '# tenant a\n',
  'tenants/b/team-b/apps/deployments/web.yaml':
    'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: team-b\nspec:\n  replicas: 2\n',
  'tenants/b/kustomization.yaml': 'resources:\n- team-b/apps/deployments/web.yaml\n',
  // A quoted template inside data is data, not a template.
  'tenants/b/team-b/configmaps/alerts.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alerts\n  namespace: team-b\ndata:\n  rule: "{{ $labels.instance }} is down"\n',
  // Templated: a Helm chart, and a plain template.
  'charts/web/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
  'charts/web/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n',
  'templated/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n  namespace: team-a\n',
  // The same ConfigMap in two files.
  'dup/one.yaml': cm('shared', 'team-a'),
  'dup/two.yaml': cm('shared', 'team-a', 'other'),
  // One file, two owners.
  'multi/all.yaml': cm('x', 'team-a') + '---\n' + cm('y', 'team-b'),
  // Anchors and aliases.
  'anchors/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: anchored\n  namespace: team-a\n  labels: &l {app: x}\n  annotations: *l\n',
  // Not YAML, and broken YAML.
  'scripts/deploy.sh': '#!/bin/sh\nkubectl apply -f .\n',
  'scripts/cm.yaml': cm('script-cm', 'team-a'),
  'broken/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: [oops\n',
  // YAML that is not an object.
  'notobj/values.yaml': 'replicas: 3\nimage: nginx\n',
  // The layout says team-a, the object says team-c.
  'misplaced/team-a/configmaps/c.yaml': cm('c', 'team-c'),
};

/** A bare repository holding FIXTURE as one commit on main. */
export async function fixtureRepository(files: Record<string, string> = FIXTURE): Promise<{ gitDir: string; cleanup(): void }> {
  const root = mkdtempSync(join(tmpdir(), 'analyzer-fixture-'));
  const work = join(root, 'work');
  const gitDir = join(root, 'repo.git');
  mkdirSync(work);
  const g = (...args: string[]) => run('git', ['-C', work, ...args], { env: GIT_ENV });
  await run('git', ['init', '--quiet', '--bare', '--initial-branch=main', gitDir], { env: GIT_ENV });
  await g('init', '--quiet', '--initial-branch=main');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(work, path)), { recursive: true });
    writeFileSync(join(work, path), text);
  }
  await g('add', '-A');
  await g('-c', 'user.name=Fixture', '-c', 'user.email=fixture@example.com', 'commit', '--quiet', '-m', 'fixture');
  await g('push', '--quiet', gitDir, 'main');
  rmSync(work, { recursive: true, force: true });
  return { gitDir, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}
