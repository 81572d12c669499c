// The Kubernetes calls of actions/runner-container-hooks' k8s package for one job, made with
// the same client library (@kubernetes/client-node, installed from npm by the test):
//   isAuthPermissionsOK  -> one SelfSubjectAccessReview per required verb (packages/k8s/src/k8s/index.ts)
//   createJobPod         -> createNamespacedPod
//   waitForPodPhases     -> readNamespacedPod until Running (back-off shortened for tests)
//   deletePod            -> deleteNamespacedPod with gracePeriodSeconds 0
// Written for this project from the hook's source; the hook itself is not on npm.
// Prints one JSON line per step; exits 1 on the first failure.
import * as k8s from '@kubernetes/client-node'

const namespace = process.env.HOOK_NAMESPACE
const podName = process.env.HOOK_POD
const kc = new k8s.KubeConfig()
kc.loadFromDefault()
const core = kc.makeApiClient(k8s.CoreV1Api)
const authz = kc.makeApiClient(k8s.AuthorizationV1Api)

const requiredPermissions = [
  { group: '', verbs: ['get', 'list', 'create', 'delete'], resource: 'pods', subresource: '' },
  { group: '', verbs: ['get', 'create'], resource: 'pods', subresource: 'exec' },
  { group: '', verbs: ['get', 'list', 'watch'], resource: 'pods', subresource: 'log' },
  { group: '', verbs: ['create', 'delete', 'get', 'list'], resource: 'secrets', subresource: '' }
]

function say (step, detail) {
  process.stdout.write(JSON.stringify({ step, ...detail }) + '\n')
}

async function permissions () {
  const denied = []
  for (const p of requiredPermissions) {
    for (const verb of p.verbs) {
      const review = await authz.createSelfSubjectAccessReview({
        body: {
          spec: {
            resourceAttributes: {
              verb, namespace, group: p.group, resource: p.resource, subresource: p.subresource
            }
          }
        }
      })
      if (!review.status?.allowed) denied.push(`${verb} ${p.resource}${p.subresource ? '/' + p.subresource : ''}`)
    }
  }
  return denied
}

async function main () {
  const denied = await permissions()
  say('permissions', { denied })
  if (denied.length) process.exit(1)
  const created = await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: podName, labels: { 'runner-pod': 'runner-1' } },
      spec: {
        restartPolicy: 'Never',
        priorityClassName: 'arc-workflow',
        containers: [{ name: 'job', image: 'node:20', command: ['tail', '-f', '/dev/null'] }]
      }
    }
  })
  say('created', { phase: created.status?.phase, priority: created.spec?.priority })
  let phase = 'Unknown'
  for (let attempt = 0; attempt < 100; attempt++) {
    const pod = await core.readNamespacedPod({ name: podName, namespace })
    phase = pod.status?.phase ?? 'Unknown'
    if (phase === 'Running') break
    if (phase !== 'Pending' && phase !== 'Unknown') throw new Error(`Pod ${podName} is unhealthy with phase status ${phase}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  say('waited', { phase })
  if (phase !== 'Running') process.exit(1)
  await core.deleteNamespacedPod({ name: podName, namespace, gracePeriodSeconds: 0 })
  say('deleted', {})
}

main().catch(err => {
  say('error', { message: String(err?.body ?? err?.message ?? err) })
  process.exit(1)
})
