//! `forward!`: the one spelling of "pass this call to the wrapped store" for the test
//! decorators (a store that counts, fails, slows or freezes some calls).
//!
//! A decorator implements `WorkerStore` and `CallerStore` itself, writes the calls it
//! changes, and names the rest: `forward!(inner: lease_ttl recover next_wakeup)` inside an
//! `impl` writes each as the same call of `self.inner`'s store. `forward!(inner via around:
//! …)` passes each call's future through `self.around(future)` first (`changed` and the
//! synchronous calls excepted).

macro_rules! forward {
    ($field:ident: $($method:ident)*) => {
        $( forward!(@method [] $field $method); )*
    };
    ($field:ident via $around:ident: $($method:ident)*) => {
        $( forward!(@method [$around] $field $method); )*
    };

    (@call [] $this:ident $call:expr) => { $call };
    (@call [$around:ident] $this:ident $call:expr) => { $this.$around($call) };

    (@method [$($around:ident)?] $field:ident lease_ttl) => {
        fn lease_ttl(&self) -> Option<std::time::Duration> {
            lockgate_batch::store::WorkerStore::lease_ttl(&self.$field)
        }
    };
    (@method [$($around:ident)?] $field:ident recover) => {
        fn recover(
            &self,
            now: lockgate_batch::store::Timestamp,
        ) -> impl Future<Output = Result<usize, lockgate_batch::StoreError>> + Send {
            forward!(@call [$($around)?] self
                lockgate_batch::store::WorkerStore::recover(&self.$field, now))
        }
    };
    (@method [$($around:ident)?] $field:ident claim) => {
        fn claim(
            &self,
            now: lockgate_batch::store::Timestamp,
        ) -> impl Future<
            Output = Result<Option<lockgate_batch::store::Claim>, lockgate_batch::StoreError>,
        > + Send {
            forward!(@call [$($around)?] self
                lockgate_batch::store::WorkerStore::claim(&self.$field, now))
        }
    };
    (@method [$($around:ident)?] $field:ident renew) => {
        fn renew(
            &self,
            claim: &lockgate_batch::store::Claim,
            now: lockgate_batch::store::Timestamp,
        ) -> impl Future<Output = Result<bool, lockgate_batch::StoreError>> + Send {
            forward!(@call [$($around)?] self
                lockgate_batch::store::WorkerStore::renew(&self.$field, claim, now))
        }
    };
    (@method [$($around:ident)?] $field:ident finish) => {
        fn finish(
            &self,
            claim: &lockgate_batch::store::Claim,
            end: lockgate_batch::store::ClaimEnd,
            now: lockgate_batch::store::Timestamp,
            take_next: bool,
        ) -> impl Future<
            Output = Result<lockgate_batch::store::Finished, lockgate_batch::StoreError>,
        > + Send {
            forward!(@call [$($around)?] self lockgate_batch::store::WorkerStore::finish(
                &self.$field, claim, end, now, take_next
            ))
        }
    };
    (@method [$($around:ident)?] $field:ident next_wakeup) => {
        fn next_wakeup(
            &self,
            now: lockgate_batch::store::Timestamp,
        ) -> impl Future<
            Output = Result<Option<lockgate_batch::store::Timestamp>, lockgate_batch::StoreError>,
        > + Send {
            forward!(@call [$($around)?] self
                lockgate_batch::store::WorkerStore::next_wakeup(&self.$field, now))
        }
    };
    (@method [$($around:ident)?] $field:ident changed) => {
        fn changed(&self) -> impl Future<Output = ()> + Send {
            lockgate_batch::store::WorkerStore::changed(&self.$field)
        }
    };
    (@method [$($around:ident)?] $field:ident evict_oldest) => {
        fn evict_oldest(
            &self,
            max_bytes: u64,
        ) -> impl Future<
            Output = Result<lockgate_batch::store::Evicted, lockgate_batch::StoreError>,
        > + Send {
            forward!(@call [$($around)?] self
                lockgate_batch::store::WorkerStore::evict_oldest(&self.$field, max_bytes))
        }
    };
    (@method [$($around:ident)?] $field:ident submit) => {
        fn submit(
            &self,
            job: lockgate_batch::store::NewJob,
        ) -> lockgate_batch::store::BoxFuture<
            '_,
            Result<lockgate_batch::store::Submitted, lockgate_batch::SubmitError>,
        > {
            Box::pin(forward!(@call [$($around)?] self
                lockgate_batch::store::CallerStore::submit(&self.$field, job)))
        }
    };
    (@method [$($around:ident)?] $field:ident status) => {
        fn status<'a>(
            &'a self,
            id: lockgate_batch::JobId,
            caller: &'a lockgate_batch::Caller,
        ) -> lockgate_batch::store::BoxFuture<
            'a,
            Result<Option<lockgate_batch::Job>, lockgate_batch::StoreError>,
        > {
            Box::pin(forward!(@call [$($around)?] self
                lockgate_batch::store::CallerStore::status(&self.$field, id, caller)))
        }
    };
    (@method [$($around:ident)?] $field:ident summary) => {
        fn summary<'a>(
            &'a self,
            id: lockgate_batch::JobId,
            caller: &'a lockgate_batch::Caller,
        ) -> lockgate_batch::store::BoxFuture<
            'a,
            Result<Option<lockgate_batch::JobSummary>, lockgate_batch::StoreError>,
        > {
            Box::pin(forward!(@call [$($around)?] self
                lockgate_batch::store::CallerStore::summary(&self.$field, id, caller)))
        }
    };
    (@method [$($around:ident)?] $field:ident jobs) => {
        fn jobs<'a>(
            &'a self,
            caller: &'a lockgate_batch::Caller,
        ) -> lockgate_batch::store::BoxFuture<
            'a,
            Result<Vec<lockgate_batch::JobSummary>, lockgate_batch::StoreError>,
        > {
            Box::pin(forward!(@call [$($around)?] self
                lockgate_batch::store::CallerStore::jobs(&self.$field, caller)))
        }
    };
    (@method [$($around:ident)?] $field:ident touch) => {
        fn touch<'a>(
            &'a self,
            id: lockgate_batch::JobId,
            caller: &'a lockgate_batch::Caller,
            now: lockgate_batch::store::Timestamp,
        ) -> lockgate_batch::store::BoxFuture<'a, Result<bool, lockgate_batch::StoreError>> {
            Box::pin(forward!(@call [$($around)?] self
                lockgate_batch::store::CallerStore::touch(&self.$field, id, caller, now)))
        }
    };
    (@method [$($around:ident)?] $field:ident cancel) => {
        fn cancel<'a>(
            &'a self,
            id: lockgate_batch::JobId,
            caller: &'a lockgate_batch::Caller,
            now: lockgate_batch::store::Timestamp,
        ) -> lockgate_batch::store::BoxFuture<
            'a,
            Result<lockgate_batch::store::CancelOutcome, lockgate_batch::StoreError>,
        > {
            Box::pin(forward!(@call [$($around)?] self
                lockgate_batch::store::CallerStore::cancel(&self.$field, id, caller, now)))
        }
    };
    (@method [$($around:ident)?] $field:ident jobs_page) => {
        fn jobs_page<'a>(
            &'a self,
            scope: &'a lockgate_batch::page::Scope,
            query: &'a lockgate_batch::page::JobsQuery,
        ) -> lockgate_batch::store::BoxFuture<
            'a,
            Result<lockgate_batch::page::JobsPage, lockgate_batch::StoreError>,
        > {
            Box::pin(forward!(@call [$($around)?] self
                lockgate_batch::store::CallerStore::jobs_page(&self.$field, scope, query)))
        }
    };
    (@method [$($around:ident)?] $field:ident job) => {
        fn job<'a>(
            &'a self,
            scope: &'a lockgate_batch::page::Scope,
            id: lockgate_batch::JobId,
        ) -> lockgate_batch::store::BoxFuture<
            'a,
            Result<Option<lockgate_batch::page::JobListing>, lockgate_batch::StoreError>,
        > {
            Box::pin(forward!(@call [$($around)?] self
                lockgate_batch::store::CallerStore::job(&self.$field, scope, id)))
        }
    };
    (@method [$($around:ident)?] $field:ident targets_page) => {
        fn targets_page<'a>(
            &'a self,
            scope: &'a lockgate_batch::page::Scope,
            id: lockgate_batch::JobId,
            query: &'a lockgate_batch::page::TargetsQuery,
        ) -> lockgate_batch::store::BoxFuture<
            'a,
            Result<Option<lockgate_batch::page::TargetsPage>, lockgate_batch::StoreError>,
        > {
            Box::pin(forward!(@call [$($around)?] self
                lockgate_batch::store::CallerStore::targets_page(&self.$field, scope, id, query)))
        }
    };
    (@method [$($around:ident)?] $field:ident events) => {
        fn events(
            &self,
        ) -> Option<tokio::sync::broadcast::Receiver<lockgate_batch::store::StoreEvent>> {
            lockgate_batch::store::CallerStore::events(&self.$field)
        }
    };
}
