/** What this server calls itself: in OIP server metadata (server side) and in a handler's context.system_properties (worker side). */
export const SERVER_NAME = 'sagemaker-mme-node';
export const SERVER_VERSION = '0.1.0';
/** Every model's one version (OIP model metadata, KServe's model_version). */
export const MODEL_VERSION = '1';
