import type { DashboardRoute, DashboardServices } from "./Page.js"

export const AiRoutes: ReadonlyArray<DashboardRoute<DashboardServices>> = []
