export { AsyncResult, type GetResultOptions } from './async-result';
export { RpcResultBackend, registerRpcResultBackend, type RpcResultBackendOptions } from './rpc-result-backend';
export {
  KQ_EXCEPTION_MODULE,
  exceptionFromInfo,
  exceptionInfo,
  exceptionTraceback,
  formatExceptionMessage,
} from './exception-info';
