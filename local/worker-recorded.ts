// The worker with its AWS calls recorded (local/aws-call-recorder.ts), for the IAM test.
// An entry point rather than a `--import` preload: Temporal's workflow threads inherit
// the process's preloads, and they cannot load TypeScript.
import './aws-call-recorder';
import '../worker/main';
