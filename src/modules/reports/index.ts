import type { PosdModule } from '../../api/module.js';
import { reportRoutes } from './routes.js';
import { reportWorker } from './worker.js';

export { ReportsService } from './service.js';
export { reportWorker, ReportWorker } from './worker.js';

export const reportsModule: PosdModule = { name: 'reports', api: reportRoutes, workers: (ctx) => [reportWorker(ctx)] };
