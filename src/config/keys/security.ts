/** Security, and what may configure the server: tokens, TLS, model roots, environment and unknown keys. */
import { bool, regex, str, type KeySpec } from './kinds';

export const kSecurityKeys = {
  model_roots: str(null, '/opt/ml/models,/data/models', {
    field: null,
    doc: 'Comma list of directories a load url must resolve into (after following links); anything else is refused with 400 before a file is read. Unset = model_store and /opt/ml/models. Relative urls resolve against model_store.',
  }),
  management_token: str(null, '$$MME_MANAGEMENT_TOKEN$$', {
    doc: 'When set, the management API (POST/PUT/DELETE/GET /models) needs Authorization: Bearer <token>. Leave unset on SageMaker, whose platform sends no token; use it when the management port is reachable by others.',
  }),
  inference_token: str(null, '$$MME_INFERENCE_TOKEN$$', {
    field: null,
    doc: 'When set, the data plane (every invoke path, /v2 metadata and infer, gRPC but its health calls) needs Authorization: Bearer <token> (gRPC: authorization metadata); /ping and the health checks stay open. A comma list allows several tokens, so one can be rotated. Refused with SAGEMAKER_MULTI_MODEL=true, whose platform sends none.',
  }),
  tls_cert_file: str(null, '/etc/mme/tls/tls.crt', {
    field: null,
    doc: 'PEM certificate (chain) that every https:// listener (inference_address, management_address, metrics_address) and the gRPC listener serve, TLS 1.2 and up; with tls_key_file. An http:// inference_address is then refused as a likely mistake; management_address and metrics_address may stay http:// (e.g. on loopback). Both files are reloaded when they change (cert-manager rotation): new connections get the new certificate, open ones are kept.',
  }),
  tls_key_file: str(null, '/etc/mme/tls/tls.key', {
    field: null,
    doc: 'PEM private key of tls_cert_file, unencrypted; a missing, unreadable or mismatched key stops start-up.',
  }),
  tls_client_ca_file: str(null, '/etc/mme/tls/ca.crt', {
    field: null,
    doc: 'PEM CA certificate(s) for mutual TLS: every TLS listener then requires a client certificate signed by one of them. Unset = no client certificate asked for.',
  }),
  blacklist_env_vars: regex(null, 'AWS_.*', {
    doc: 'Regular expression of environment variable names not passed to workers; it must match the whole name, as in MMS (e.g. AWS_.*).',
  }),
  enable_envvars_config: bool('false', {
    field: null,
    doc: 'true = environment variables MMS_<KEY> (e.g. MMS_JOB_QUEUE_SIZE) override the file and the command line. Only read from the file.',
  }),
  allow_unknown_keys: bool('false', {
    field: null,
    doc: 'false = a key this server does not know stops start-up, naming the key it probably meant; true = such keys are logged at start-up and otherwise ignored, for config.properties files shared with MMS or TorchServe (vmargs, number_of_netty_threads, ...).',
  }),
} as const satisfies Record<string, KeySpec>;
