/**
 * Test layers of the services: a service's `layer` (which provides every service it uses) on the test
 * database and the test configuration, without the HTTP app or the workers (`docs/effect4.md`,
 * "Services and layers").
 */
import type { PgClient } from "@effect/sql-pg"
import type * as SqlClient from "effect/sql/SqlClient"
import * as Layer from "effect/Layer"
import type { DatabaseKind } from "../../src/Sql.js"
import { TestConfig } from "./App.js"
import { TestDatabase } from "./Database.js"

/** What the database layer provides: all a service's `layer` may still need. */
export type DatabaseServices = SqlClient.SqlClient | PgClient.PgClient | DatabaseKind

/**
 * `layer` on the test database, with the test configuration (`config` wins); provides the database
 * too. Only a layer that needs nothing but the database is accepted: a service that does not declare
 * one of its dependencies fails to type-check here. Merge layers before, not after
 * (`layerTest(Layer.mergeAll(…), config)`): one database, one copy of each service they share.
 */
export const layerTest = <A, E, R extends DatabaseServices>(
  layer: Layer.Layer<A, E, R>,
  config: Record<string, string> = {}
) =>
  layer.pipe(Layer.provideMerge(TestDatabase), Layer.provide(TestConfig(config)), Layer.orDie)
