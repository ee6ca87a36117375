/** A worker pool of a test's own job handlers, over the test's database and queue. */
import * as SqlClient from "effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type * as Job from "../../src/Jobs/Job.js"
import { JobQueue } from "../../src/Jobs/Queue.js"
import { WorkersLive } from "../../src/Jobs/Worker.js"
import { DatabaseKind } from "../../src/Sql.js"
import { fastPipeline, TestConfig } from "./App.js"

const PgClientTag = PgClient.PgClient

/**
 * Starts a pool running the handlers `jobs` registers (`Job.handlers` layers), with `settings` over
 * `fastPipeline`, in a scope the test may close itself (as SIGTERM does) and that closes when the test
 * ends. Fails as the pool's start does (`Job.JobsMisdeclared`).
 */
export const startWorkers = <E>(
  jobs: Layer.Layer<never, E, Job.Registry | SqlClient.SqlClient | JobQueue>,
  settings: Record<string, string> = {},
  options: { readonly expected?: () => ReadonlyArray<string> } = {}
) =>
  Effect.gen(function*() {
    const scope = yield* Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void))
    // Only the database and the queue: not the test's own Scope, Clock or config.
    const context = Context.pick(SqlClient.SqlClient, PgClientTag, DatabaseKind, JobQueue)(
      yield* Effect.context<SqlClient.SqlClient | PgClient.PgClient | DatabaseKind | JobQueue>()
    )
    yield* Layer.buildWithScope(
      WorkersLive(jobs, options).pipe(
        Layer.provide(Layer.succeedContext(context)),
        Layer.provide(TestConfig({ ...fastPipeline, ...settings }))
      ),
      scope
    )
    return scope
  })
