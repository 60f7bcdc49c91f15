-- A login ticket belongs to the authentication service (WSAA) that issued it as well as to a
-- certificate: homologation and production (or a FISCAL_URL, or the built-in simulator) each hold a
-- ticket of their own for one certificate, valid only there. Keyed by the certificate alone, a process
-- pointed at one service read the other's ticket from this table (a `fiscal check` against homologation
-- on the production database sent production's ticket to homologation, then forgot it as refused, or
-- stored its own over it). `service` is the service's name: `production`, `homologation`, the
-- FISCAL_URL, or `simulator` (FiscalSettings::service).
--
-- A ticket stored before this migration was issued by whichever service the process that stored it
-- used, which the migration cannot know. It is neither given to a service nor dropped: dropped, a valid
-- production ticket would leave invoicing refused for up to twelve hours, since the authority refuses a
-- new login while a ticket is valid (`coe.alreadyAuthenticated`). Such a ticket (`service` null) is
-- never read by itself: a service that refuses a login because it holds a valid ticket for the
-- certificate, none being stored under its name, has shown that ticket to be its own, and a copy is
-- stored as its (fiscal/tickets.rs `adopt`); a service whose login succeeds held none, and the old
-- ticket stays for the other. Once expired, an old ticket is never read again.
alter table fiscal_tickets add column service text;
alter table fiscal_tickets drop constraint fiscal_tickets_pkey;
create unique index fiscal_tickets_by_service on fiscal_tickets (service, fingerprint);
