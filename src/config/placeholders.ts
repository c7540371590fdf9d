/**
 * The deployment files ship placeholders (`SET-YOUR-…`, deploy/k8s/settings.env) where only the user
 * knows the value. One left in place must stop the server at start, naming the variable: a role ARN
 * placeholder (copied into AWS_ROLE_ARN by EKS's IRSA webhook) otherwise gives a Ready pod whose first
 * invoke fails.
 */
import { configError } from '../errors';
import type { Env } from './file-settings';

const kPlaceholder = 'SET-YOUR-';

export function refusePlaceholders(env: Env): void {
  const found = Object.keys(env)
    .filter((name) => env[name]?.includes(kPlaceholder))
    .sort();
  if (found.length === 0) return;
  const listed = found.map((name) => `${name}=${JSON.stringify(env[name]!.slice(0, 100))}`).join(', ');
  throw configError(
    `environment variable ${listed} still holds a placeholder of the deployment files: set your value where it comes from (in Kubernetes, the ${kPlaceholder}… line of deploy/k8s/settings.env; docs/deploy.md "Kubernetes: your settings")`,
  );
}
