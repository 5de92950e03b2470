export { AsyncResult, type GetResultOptions, type ResultBackendSource, type ResultNode } from './async-result';
export { GroupResult, ResultSet, resultFromTuple, type Revoker, type SetMember } from './group-result';
export { RpcResultBackend, registerRpcResultBackend, type RpcResultBackendOptions } from './rpc-result-backend';
export {
  KQ_EXCEPTION_MODULE,
  exceptionFromInfo,
  exceptionInfo,
  exceptionTraceback,
  formatExceptionMessage,
} from './exception-info';
export { assertDateDoneForm, formatDateDone } from './date-done';
