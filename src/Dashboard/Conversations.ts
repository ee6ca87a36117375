import type { DashboardRoute, DashboardServices } from "./Page.js"

export const ConversationRoutes: ReadonlyArray<DashboardRoute<DashboardServices>> = []
